/**
 * `qkv classify`: the labels of each text from a Hugging Face encoder folder with a classification head
 * (config.json's id2label), through the text-classification pipeline. One line per text: label and score
 * (tab-separated), with --top-k several pairs; --json: the pipeline's results.
 */
import { Command } from '@commander-js/extra-typings';
import { pipeline, type ClassificationResult } from '../../pipelines/index.ts';
import { int } from '../args.ts';
import { dtypeOf, inputTexts, warnTo } from '../encoder-input.ts';
import { dtypeOption, log, modelOption, type FlagsOf } from '../options.ts';

function flags() {
  const cmd = new Command('classify')
    .description('the labels of texts (arguments, or stdin lines) from an encoder folder with a classifier')
    .argument('[texts...]', 'texts to classify (default: stdin, one per line)');
  const options = modelOption(cmd)
    .option('--top-k <k>', 'labels per text, highest first', int('--top-k'), 1)
    .option('--json', 'write the results as JSON');
  return dtypeOption(options);
}

export function classifyCommand() {
  return flags().action(async (texts, o) => classify({ ...o, texts, log }));
}

/** `qkv classify`'s options; `write` says where the output goes (default stdout). */
export type ClassifyArgs = FlagsOf<typeof flags> & {
  texts: string[];
  log: (line: string) => void;
  write?: (text: string) => void;
};

export async function classify(a: ClassifyArgs): Promise<void> {
  const texts = inputTexts(a.texts, 'classify');
  const classifier = await pipeline('text-classification', a.model, dtypeOf(a.dtype));
  const results = await classifier(texts, { topK: a.topK, onWarning: warnTo(a.log) });
  const write = a.write ?? ((s: string) => process.stdout.write(s));
  if (a.json) {
    write(`${JSON.stringify(results)}\n`);
    return;
  }
  // topK 1: one result per text; else a list per text (one text: its list).
  const perText = (
    a.topK === 1 ? (results as ClassificationResult[]).map((r) => [r]) : texts.length === 1 ? [results] : results
  ) as ClassificationResult[][];
  for (const r of perText) write(`${r.map((c) => `${c.label}\t${c.score.toFixed(4)}`).join('\t')}\n`);
}
