/**
 * `pipeline('text-classification', folder)`: a text's labels with their scores, as transformers.js gives them:
 * `{ label, score }`, the top `topK` (default 1) highest first; with topK 1 one result per text (a flat list),
 * else a list per text (one text: its list). Scores as transformers' pipeline computes them: the sigmoid of each
 * logit for problem_type multi_label_classification or a single label, else the softmax over the labels; labels
 * from config.json's id2label.
 */
import type { OpenedEncoder } from '../folder/open.ts';
import { runEncoder, softmaxRow, textsOf, type EncoderCallOptions } from './encoder-batch.ts';
import { checkOptions, type OptionSpec } from './options.ts';

/** One label and its score. */
export interface ClassificationResult {
  label: string;
  score: number;
}

/** Per-call options of a {@link TextClassificationPipeline}. */
export interface TextClassificationOptions extends EncoderCallOptions {
  /** How many labels per text, highest first (default 1; more than the model has: all of them). */
  topK?: number;
}

const OPTIONS: OptionSpec = { topK: 'positiveInt', onWarning: 'function', signal: 'signal' };

/** What `pipeline('text-classification', folder)` gives (see the file comment for the result's shape). */
export interface TextClassificationPipeline {
  (
    input: string | readonly string[],
    options?: TextClassificationOptions,
  ): Promise<ClassificationResult[] | ClassificationResult[][]>;
  readonly task: 'text-classification';
  /** The labels, in id order (config.json's id2label). */
  readonly labels: readonly string[];
  readonly opened: OpenedEncoder;
}

/** The text-classification pipeline of an opened encoder folder with a classification head. */
export function textClassificationPipeline(opened: OpenedEncoder): TextClassificationPipeline {
  const { labels, problemType } = opened.hf;
  const sigmoid = problemType === 'multi_label_classification' || labels.length === 1;
  const run = async (input: string | readonly string[], options: TextClassificationOptions = {}) => {
    checkOptions('text-classification', options, OPTIONS);
    const { texts, one } = textsOf('text-classification', input);
    const topK = Math.min(options.topK ?? 1, labels.length);
    const batches = await runEncoder('text-classification', opened, texts, 'classification', options);
    const results: ClassificationResult[][] = new Array(texts.length);
    for (const b of batches) {
      b.rows.forEach((_, r) => {
        const logits = b.head!.subarray(r * labels.length, (r + 1) * labels.length);
        const scores = sigmoid ? Array.from(logits, (x) => Math.fround(1 / (1 + Math.exp(-x)))) : softmaxRow(logits);
        const order = Array.from(scores.keys()).sort((x, y) => scores[y] - scores[x] || x - y);
        results[b.index[r]!] = order.slice(0, topK).map((i) => ({ label: labels[i], score: scores[i] }));
      });
    }
    if (topK === 1) return results.map((r) => r[0]);
    return one ? results[0] : results;
  };
  return Object.assign(run, { task: 'text-classification' as const, labels, opened }) as TextClassificationPipeline;
}
