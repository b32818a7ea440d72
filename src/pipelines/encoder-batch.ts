/**
 * What the encoder pipelines (feature-extraction, fill-mask, text-classification) share: texts checked,
 * tokenized with the folder's tokenizer, cut to the model's length (with a warning), padded into batches as
 * transformers pads them (the pad id, attention mask 0, type id 0; RoBERTa's position ids from the ids),
 * run through the encoder without recording gradients, and the states read back asynchronously (so a GPU
 * device works as the CPU ones do). The AbortSignal is checked before every batch, after the event loop ran.
 */
import { noGrad } from '../autograd/grad-mode.ts';
import type { OpenedEncoder } from '../folder/open.ts';
import { positionIds, type Encoder } from '../models/encoder.ts';
import { memoryScope } from '../tensor/storage.ts';
import { Tensor } from '../tensor/tensor.ts';
import type { HfEncoding } from '../text/hf-tokenizer.ts';
import { describeValue, warner, type PipelineWarning } from './options.ts';

/** Texts per forward pass: bounded so a long list does not pad every text to the longest of all. */
export const BATCH = 32;

/** The per-call options every encoder pipeline takes. */
export interface EncoderCallOptions {
  /** Called with each warning (a text cut to the model's length). Default: console.warn. */
  onWarning?: (warning: PipelineWarning) => void;
  /** Cancels the call: checked before every batch; the call rejects with the signal's reason. */
  signal?: AbortSignal;
}

/** The input as a list of texts, and whether one text was given; an Error naming `task` for anything else. */
export function textsOf(task: string, input: unknown): { texts: string[]; one: boolean } {
  const one = typeof input === 'string';
  if (!one && !Array.isArray(input))
    throw new Error(`${task}: expected a string or an array of strings, got ${describeValue(input)}`);
  const texts = (one ? [input] : input) as unknown[];
  texts.forEach((t, i) => {
    if (typeof t !== 'string') throw new Error(`${task}: input ${i}: expected a string, got ${describeValue(t)}`);
  });
  return { texts: texts as string[], one };
}

/** One batch's encodings and the model's outputs for it, read back. */
export interface EncodedBatch {
  /** The texts' encodings (ids with special tokens, after truncation). */
  rows: HfEncoding[];
  /** Each row's text: its index in the input list. */
  index: number[];
  /** The padded length. */
  T: number;
  /** The last layer's states (B, T, dModel), read back. */
  hidden: Float32Array;
  /** The head's output, read back: masked-LM logits (B, T, V) or classification logits (B, labels); else null. */
  head: Float32Array | null;
}

/** The tensors of a padded batch, as transformers' tokenizer(padding=True) makes them. */
export function batchInputs(model: Encoder, rows: readonly HfEncoding[]) {
  const c = model.config;
  const B = rows.length;
  const T = Math.max(...rows.map((r) => r.ids.length));
  const ids = new Int32Array(B * T).fill(c.padId);
  const mask = new Int32Array(B * T);
  const types = new Int32Array(B * T);
  rows.forEach((r, b) => {
    ids.set(r.ids, b * T);
    mask.fill(1, b * T, b * T + r.ids.length);
    types.set(r.typeIds, b * T);
  });
  const int = (a: Int32Array) => new Tensor(a, [B, T], 'int32');
  return {
    T,
    inputs: {
      inputIds: int(ids),
      attentionMask: int(mask),
      tokenTypeIds: model.embeddings.tokenType ? int(types) : null,
      positionIds: int(positionIds(ids, B, T, c.positions, c.padId)),
    },
  };
}

/**
 * Every text through the encoder (and the head `head` names), in batches of {@link BATCH}: one EncodedBatch
 * per batch, each row with the index of its text. Texts longer than the model reads are cut to
 * `opened.maxTokens`, each with a warning. The texts are batched longest first, as sentence-transformers'
 * encode() orders them, so that a batch pads its texts to about their own length and not to the longest of a
 * mixed batch (on Multi30K sentences in batches of 32 in input order, about 45% of the padded tokens were
 * padding); each text's result does not depend on its batch (the padding is masked).
 */
export async function runEncoder(
  task: string,
  opened: OpenedEncoder,
  texts: readonly string[],
  head: 'none' | 'masked-lm' | 'classification',
  options: EncoderCallOptions,
): Promise<EncodedBatch[]> {
  const warn = warner(options.onWarning);
  const encoded = texts.map((text, i) => {
    const r = opened.tokenizer.encodeInput(text, { maxLength: opened.maxTokens });
    if (r.truncated > 0)
      warn({
        kind: 'truncated',
        message: `${task}: input ${i}: ${r.ids.length + r.truncated} tokens, truncated to ${r.ids.length}`,
        line: i + 1,
      });
    return r;
  });
  // Longest first; equal lengths keep their order (a stable sort).
  const order = encoded.map((_, i) => i).sort((a, b) => encoded[b]!.ids.length - encoded[a]!.ids.length);
  const out: EncodedBatch[] = [];
  for (let start = 0; start < texts.length; start += BATCH) {
    await new Promise((r) => setTimeout(r, 0)); // lets a timer or an event abort the call
    options.signal?.throwIfAborted();
    const index = order.slice(start, start + BATCH);
    const rows = index.map((i) => encoded[i]!);
    const { T, inputs } = batchInputs(opened.model, rows);
    // In a memoryScope: under wasm the activations live in wasm memory, kernels work in place (no copies in and
    // out of it per call), and are freed when the batch ends; the two outputs are kept.
    const { hidden, logits } = memoryScope(() =>
      noGrad(() => {
        const h = opened.model.forward(inputs).hidden;
        const l =
          head === 'masked-lm' ? opened.model.maskedLM(h) : head === 'classification' ? opened.model.classify(h) : null;
        return { hidden: h, logits: l };
      }),
    );
    out.push({
      rows,
      index,
      T,
      hidden: await hidden.data<Float32Array>(),
      head: logits ? await logits.data<Float32Array>() : null,
    });
  }
  return out;
}

/** softmax of one row, in float64 then rounded (the probabilities transformers' pipelines report). */
export function softmaxRow(x: ArrayLike<number>): number[] {
  let max = -Infinity;
  for (let i = 0; i < x.length; i++) max = Math.max(max, x[i]);
  let sum = 0;
  const e = Array.from(x, (v) => Math.exp(v - max));
  for (const v of e) sum += v;
  return e.map((v) => Math.fround(v / sum));
}
