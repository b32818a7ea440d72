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
 * A classifier's `text<TAB>label` data comes with the encoder families (BERT-style heads): a third class here
 * with its batches and loss, and the FineTuner unchanged.
 */
import { epochOrder, makeBatch, planBatches, type Batch, type Pair, type SpecialIds } from '../data/batching.ts';
import type { GPT } from '../models/gpt.ts';
import type { Seq2Seq } from '../models/seq2seq.ts';
import type { Module } from '../nn/module.ts';
import * as F from '../ops/index.ts';
import { Generator } from '../tensor/random.ts';
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
