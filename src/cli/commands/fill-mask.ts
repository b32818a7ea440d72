/**
 * `qkv fill-mask`: the likeliest tokens for the mask token ([MASK], <mask>) of each text, from a Hugging Face
 * encoder folder with a masked-LM head, through the fill-mask pipeline. Per text, one line per candidate:
 * score, token, the filled text (tab-separated), then an empty line; --json: the pipeline's results.
 */
import { Command } from '@commander-js/extra-typings';
import { pipeline } from '../../pipelines/index.ts';
import { int } from '../args.ts';
import { dtypeOf, inputTexts, warnTo } from '../encoder-input.ts';
import { dtypeOption, log, modelOption, type FlagsOf } from '../options.ts';

function flags() {
  const cmd = new Command('fill-mask')
    .description('the likeliest tokens for the mask token of each text (arguments, or stdin lines)')
    .argument('[texts...]', 'texts holding the mask token once (default: stdin, one per line)');
  const options = modelOption(cmd)
    .option('--top-k <k>', 'candidates per text', int('--top-k'), 5)
    .option('--json', 'write the results as JSON');
  return dtypeOption(options);
}

export function fillMaskCommand() {
  return flags().action(async (texts, o) => fillMask({ ...o, texts, log }));
}

/** `qkv fill-mask`'s options; `write` says where the output goes (default stdout). */
export type FillMaskArgs = FlagsOf<typeof flags> & {
  texts: string[];
  log: (line: string) => void;
  write?: (text: string) => void;
};

export async function fillMask(a: FillMaskArgs): Promise<void> {
  const texts = inputTexts(a.texts, 'fill-mask');
  const unmask = await pipeline('fill-mask', a.model, dtypeOf(a.dtype));
  const results = await unmask(texts, { topK: a.topK, onWarning: warnTo(a.log) });
  const write = a.write ?? ((s: string) => process.stdout.write(s));
  if (a.json) {
    write(`${JSON.stringify(results)}\n`);
    return;
  }
  for (const r of results) {
    for (const c of r) write(`${c.score.toFixed(4)}\t${c.token_str}\t${c.sequence}\n`);
    write('\n');
  }
}
