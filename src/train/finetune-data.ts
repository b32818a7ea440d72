/**
 * What a fine-tuning run trains on, one class per task, each giving the FineTuner (./finetune.ts) its batches and
 * its loss:
 *
 *   PairData    translation pairs (a Marian folder): token-budget batches of similar lengths in a new order each
 *               epoch, as `qkv train` batches; cross-entropy of target + EOS, padding ignored (Hugging Face's
 *               labels with -100), optionally label-smoothed.
 *   StreamData  text for a language model (a GPT-2 folder): one stream of ids, each line followed by the EOS
 *               (<|endoftext|>, GPT-2's document separator), cut in windows at offsets drawn from (seed, step);
 *               next-token cross-entropy, as `qkv train-lm` and transformers' run_clm.
 *
 *   ClassData   labelled texts for a classifier (a BERT-style *ForSequenceClassification folder): `batchSize`
 *               texts a step in a new order each epoch, padded to the longest (attention_mask 0 on padding); the
 *               cross-entropy of the head's logits against the labels' ids, as transformers' Trainer computes a
 *               single-label classifier's loss (the mean over the batch's texts).
 */
import { epochOrder, makeBatch, planBatches, type Batch, type Pair, type SpecialIds } from '../data/batching.ts';
import { noGrad } from '../autograd/grad-mode.ts';
import type { Encoder } from '../models/encoder.ts';
import type { GPT } from '../models/gpt.ts';
import type { Seq2Seq } from '../models/seq2seq.ts';
import { type Module, withEvalMode } from '../nn/module.ts';
import * as F from '../ops/index.ts';
import { Generator } from '../tensor/random.ts';
import { memoryScope } from '../tensor/storage.ts';
import { Tensor } from '../tensor/tensor.ts';

/** Where a task's data stands (JSON, saved in the training state). */
export type DataPosition = Record<string, number>;

/** A task's batches and loss. */
export interface FineTuneData<B> {
  /** The position of a new run with this seed. */
  start(seed: number): DataPosition;
  /** The batch at `position`, and the position after it. */
  next(position: DataPosition): { batch: B; next: DataPosition };
  /** The batch's mean loss per target token (a scalar that requires grad) and its number of target tokens. */
  loss(model: Module, batch: B): { loss: Tensor; tokens: number };
  /** One line that identifies the data (a resumed run must see the same). */
  describe(): string;
}

/** Translation pairs in batches of at most `maxTokens` padded tokens (see `qkv train`). */
export class PairData implements FineTuneData<Batch> {
  /** The batches as indices into `pairs`, fixed for the run. */
  readonly batches: number[][];

  constructor(
    /** Source ids with the tokenizer's EOS (Marian's `tokenizer(text)`), target ids without it. */
    readonly pairs: readonly Pair[],
    /** Padding, the decoder's start id (as bosId) and EOS. */
    readonly ids: SpecialIds,
    readonly maxTokens: number,
    readonly labelSmoothing = 0,
  ) {
    if (pairs.length === 0) throw new Error('PairData: no training pairs');
    this.batches = planBatches(pairs, maxTokens);
  }

  start(seed: number): DataPosition {
    return { seed, epoch: 0, batchInEpoch: 0 };
  }

  next(p: DataPosition): { batch: Batch; next: DataPosition } {
    let { epoch, batchInEpoch } = p;
    if (batchInEpoch >= this.batches.length) {
      epoch++;
      batchInEpoch = 0;
    }
    const order = epochOrder(this.batches.length, p.seed, epoch);
    const batch = makeBatch(this.pairs, this.batches[order[batchInEpoch]], this.ids);
    return { batch, next: { seed: p.seed, epoch, batchInEpoch: batchInEpoch + 1 } };
  }

  loss(model: Module, b: Batch): { loss: Tensor; tokens: number } {
    const logits = (model as Seq2Seq).forward(b.src, b.tgtIn); // (B, T, vocab)
    const loss = F.crossEntropy(logits, b.tgtOut, { ignoreIndex: this.ids.padId, labelSmoothing: this.labelSmoothing });
    return { loss, tokens: b.targetTokens };
  }

  describe(): string {
    return `${this.pairs.length} pairs in ${this.batches.length} batches of at most ${this.maxTokens} tokens`;
  }
}

/** A window batch: inputs and next-token targets (B, T). */
export interface StreamBatch {
  x: Tensor;
  y: Tensor;
}

/** A token stream in `batchSize` windows of `seqLen` + 1 tokens per step. */
export class StreamData implements FineTuneData<StreamBatch> {
  constructor(
    /** The text's ids, each line followed by the separator. */
    readonly stream: Int32Array,
    readonly batchSize: number,
    readonly seqLen: number,
  ) {
    if (!Number.isInteger(batchSize) || batchSize < 1)
      throw new Error(`StreamData: batchSize must be a positive integer, got ${batchSize}`);
    if (!Number.isInteger(seqLen) || seqLen < 1)
      throw new Error(`StreamData: seqLen must be a positive integer, got ${seqLen}`);
    if (stream.length < seqLen + 1)
      throw new Error(
        `StreamData: the text has ${stream.length} tokens, fewer than one window of seqLen + 1 = ${seqLen + 1}`,
      );
  }

  start(seed: number): DataPosition {
    return { seed, step: 0 };
  }

  next(p: DataPosition): { batch: StreamBatch; next: DataPosition } {
    const step = p.step + 1;
    const { batchSize: B, seqLen: T } = this;
    const g = new Generator((Math.imul(p.seed, 0x9e3779b1) + step) >>> 0);
    const x = new Int32Array(B * T);
    const y = new Int32Array(B * T);
    const starts = this.stream.length - T; // offsets 0 .. N − T − 1
    for (let b = 0; b < B; b++) {
      const s = g.int(starts);
      x.set(this.stream.subarray(s, s + T), b * T);
      y.set(this.stream.subarray(s + 1, s + T + 1), b * T);
    }
    const batch = { x: new Tensor(x, [B, T], 'int32'), y: new Tensor(y, [B, T], 'int32') };
    return { batch, next: { seed: p.seed, step } };
  }

  loss(model: Module, b: StreamBatch): { loss: Tensor; tokens: number } {
    return { loss: F.crossEntropy((model as GPT).forward(b.x), b.y), tokens: b.y.size };
  }

  describe(): string {
    return `${this.stream.length} tokens in windows of ${this.seqLen}, ${this.batchSize} a batch`;
  }
}

/** One labelled text: its ids (the tokenizer's, special tokens included) and its label's id. */
export interface LabelledText {
  ids: number[];
  label: number;
}

/** A classifier's batch: ids and attention mask (B, T), labels (B). */
export interface ClassBatch {
  inputIds: Tensor;
  attentionMask: Tensor;
  labels: Tensor;
}

/** `texts` (indices into `all`) padded to the longest with `padId`, with the attention mask and the labels. */
export function classBatch(all: readonly LabelledText[], texts: readonly number[], padId: number): ClassBatch {
  const B = texts.length;
  const T = Math.max(...texts.map((i) => all[i].ids.length));
  const ids = new Int32Array(B * T).fill(padId);
  const mask = new Int32Array(B * T);
  texts.forEach((i, b) => {
    ids.set(all[i].ids, b * T);
    mask.fill(1, b * T, b * T + all[i].ids.length);
  });
  return {
    inputIds: new Tensor(ids, [B, T], 'int32'),
    attentionMask: new Tensor(mask, [B, T], 'int32'),
    labels: new Tensor(
      Int32Array.from(texts, (i) => all[i].label),
      [B],
      'int32',
    ),
  };
}

/** The head's logits (B, labels) of a batch. */
function classLogits(model: Module, b: ClassBatch): Tensor {
  const m = model as Encoder;
  return m.classify(m.forward({ inputIds: b.inputIds, attentionMask: b.attentionMask }).hidden);
}

/** Labelled texts, `batchSize` a step. */
export class ClassData implements FineTuneData<ClassBatch> {
  constructor(
    readonly texts: readonly LabelledText[],
    readonly batchSize: number,
    readonly padId: number,
  ) {
    if (texts.length === 0) throw new Error('ClassData: no training texts');
    if (!Number.isInteger(batchSize) || batchSize < 1)
      throw new Error(`ClassData: batchSize must be a positive integer, got ${batchSize}`);
  }

  /** Batches in an epoch (the last may be short). */
  get batches(): number {
    return Math.ceil(this.texts.length / this.batchSize);
  }

  start(seed: number): DataPosition {
    return { seed, epoch: 0, batchInEpoch: 0 };
  }

  next(p: DataPosition): { batch: ClassBatch; next: DataPosition } {
    let { epoch, batchInEpoch } = p;
    if (batchInEpoch >= this.batches) {
      epoch++;
      batchInEpoch = 0;
    }
    const order = epochOrder(this.texts.length, p.seed, epoch);
    const texts = order.slice(batchInEpoch * this.batchSize, (batchInEpoch + 1) * this.batchSize);
    return {
      batch: classBatch(this.texts, texts, this.padId),
      next: { seed: p.seed, epoch, batchInEpoch: batchInEpoch + 1 },
    };
  }

  loss(model: Module, b: ClassBatch): { loss: Tensor; tokens: number } {
    return { loss: F.crossEntropy(classLogits(model, b), b.labels), tokens: b.labels.size };
  }

  describe(): string {
    return `${this.texts.length} labelled texts, ${this.batchSize} a batch`;
  }
}

/** The mean cross-entropy per text of `texts` (eval mode, no gradient), in batches of `batchSize`. */
export function evaluateClassifier(
  model: Module,
  texts: readonly LabelledText[],
  padId: number,
  batchSize: number,
): number {
  let total = 0;
  withEvalMode(model, () =>
    noGrad(() => {
      for (let s = 0; s < texts.length; s += batchSize) {
        const idx = Array.from({ length: Math.min(batchSize, texts.length - s) }, (_, i) => s + i);
        const b = classBatch(texts, idx, padId);
        total += memoryScope(() => F.crossEntropy(classLogits(model, b), b.labels, { reduction: 'sum' }).item());
      }
    }),
  );
  return total / texts.length;
}
