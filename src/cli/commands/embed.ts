/**
 * `qkv embed`: sentence embeddings from a Hugging Face encoder folder (BERT, RoBERTa, XLM-R, DistilBERT;
 * sentence-transformers folders pool as their modules say), through the feature-extraction pipeline library
 * users call. One line per text: the numbers, space-separated; --json: a JSON array of arrays.
 */
import { Command } from '@commander-js/extra-typings';
import { pipeline } from '../../pipelines/index.ts';
import { choice } from '../args.ts';
import { dtypeOf, inputTexts, warnTo } from '../encoder-input.ts';
import { dtypeOption, log, modelOption, type FlagsOf } from '../options.ts';

function flags() {
  const cmd = new Command('embed')
    .description('sentence embeddings of texts (arguments, or one per line of stdin) from an encoder folder')
    .argument('[texts...]', 'texts to embed (default: stdin, one per line)');
  const options = modelOption(cmd)
    .option(
      '--pooling <mode>',
      "mean | cls | none (default: the folder's sentence-transformers pooling, else none)",
      choice('--pooling', ['mean', 'cls', 'none'] as const),
    )
    .option('--normalize', "divide each embedding by its L2 norm (default: the folder's Normalize module)")
    .option('--no-normalize', 'do not normalize')
    .option('--json', 'write a JSON array instead of one line per text');
  return dtypeOption(options);
}

export function embedCommand() {
  return flags().action(async (texts, o) => embed({ ...o, texts, log }));
}

/** `qkv embed`'s options; `write` says where the output goes (default stdout). */
export type EmbedArgs = FlagsOf<typeof flags> & {
  texts: string[];
  log: (line: string) => void;
  write?: (text: string) => void;
};

export async function embed(a: EmbedArgs): Promise<void> {
  const texts = inputTexts(a.texts, 'embed');
  const extract = await pipeline('feature-extraction', a.model, dtypeOf(a.dtype));
  const out = await extract(texts, {
    ...(a.pooling && { pooling: a.pooling }),
    ...(a.normalize !== undefined && { normalize: a.normalize }),
    onWarning: warnTo(a.log),
  });
  const rows = out.tolist() as unknown[];
  const write = a.write ?? ((s: string) => process.stdout.write(s));
  if (a.json) write(`${JSON.stringify(rows)}\n`);
  else
    for (const r of rows)
      write(
        `${JSON.stringify(r)
          .replace(/^\[|\]$/g, '')
          .replaceAll(',', ' ')}\n`,
      );
}
