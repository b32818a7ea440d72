/**
 * `pipeline('fill-mask', folder)`: the likeliest tokens for the mask token of a sentence, as transformers'
 * and transformers.js's pipeline give them: the top k as `{ score, token, token_str, sequence }`, score the
 * softmax of the masked-LM logits at the mask, token_str the token decoded alone, sequence the text with the
 * mask filled, decoded without special tokens. Each text holds the tokenizer's mask token exactly once.
 */
import type { OpenedEncoder } from '../folder/open.ts';
import { runEncoder, softmaxRow, textsOf, type EncoderCallOptions } from './encoder-batch.ts';
import { checkOptions, type OptionSpec } from './options.ts';

/** One candidate for the mask. */
export interface FillMaskResult {
  /** Its probability at the mask. */
  score: number;
  /** Its id. */
  token: number;
  /** The token decoded alone. */
  token_str: string;
  /** The text with the mask filled by it, special tokens left out. */
  sequence: string;
}

/** Per-call options of a {@link FillMaskPipeline}. */
export interface FillMaskOptions extends EncoderCallOptions {
  /** How many candidates (default 5). */
  topK?: number;
}

const OPTIONS: OptionSpec = { topK: 'positiveInt', onWarning: 'function', signal: 'signal' };

/** What `pipeline('fill-mask', folder)` gives. */
export interface FillMaskPipeline {
  /** The top k candidates of one text. */
  (text: string, options?: FillMaskOptions): Promise<FillMaskResult[]>;
  /** The top k candidates of each text. */
  (texts: readonly string[], options?: FillMaskOptions): Promise<FillMaskResult[][]>;
  readonly task: 'fill-mask';
  /** The mask token ([MASK], <mask>). */
  readonly maskToken: string;
  readonly opened: OpenedEncoder;
}

/** The fill-mask pipeline of an opened encoder folder with a masked-LM head. */
export function fillMaskPipeline(opened: OpenedEncoder): FillMaskPipeline {
  const { tokenizer } = opened;
  const maskToken = ['[MASK]', '<mask>'].find(
    (t) => tokenizer.tokenToId(t) !== undefined && tokenizer.isSpecial(tokenizer.tokenToId(t)!),
  );
  if (maskToken === undefined)
    throw new Error("fill-mask: the folder's tokenizer has no mask token ([MASK] or <mask> as a special added token)");
  const maskId = tokenizer.tokenToId(maskToken)!;
  const V = opened.model.config.vocabSize;
  const run = async (input: string | readonly string[], options: FillMaskOptions = {}) => {
    checkOptions('fill-mask', options, OPTIONS);
    const { texts, one } = textsOf('fill-mask', input);
    const topK = Math.min(options.topK ?? 5, V);
    const batches = await runEncoder('fill-mask', opened, texts, 'masked-lm', options);
    const results: FillMaskResult[][] = new Array(texts.length);
    for (const b of batches) {
      b.rows.forEach((row, r) => {
        const at = row.ids.flatMap((id, i) => (id === maskId ? [i] : []));
        if (at.length !== 1)
          throw new Error(
            `fill-mask: input ${b.index[r]}: expected the mask token ${maskToken} once, found it ${at.length} times`,
          );
        const probs = softmaxRow(b.head!.subarray((r * b.T + at[0]) * V, (r * b.T + at[0] + 1) * V));
        // Highest first; equal scores by id, as torch.topk on CPU returns them.
        const order = Array.from(probs.keys()).sort((x, y) => probs[y] - probs[x] || x - y);
        results[b.index[r]!] = order.slice(0, topK).map((token) => {
          const filled = row.ids.map((id, i) => (i === at[0] ? token : id));
          return {
            score: probs[token],
            token,
            token_str: tokenizer.decode([token]),
            sequence: tokenizer.decode(filled, { skipSpecialTokens: true }),
          };
        });
      });
    }
    return one ? results[0] : results;
  };
  return Object.assign(run, { task: 'fill-mask' as const, maskToken, opened }) as FillMaskPipeline;
}
