/**
 * generate()'s steps over a Hugging Face T5 (models/hf/t5.ts), for decode/hf-search.ts, the padding id not ruled out
 * (generate()'s rule): {@link t5Stepper}, with T5's key/value cache (stepper.ts's CachedStepper over T5.initCache and
 * T5.decodeStep: one new position per step, the cache's rows reordered by beam search), and the reference it is
 * tested against, {@link T5FullStepper}, which re-runs the decoder on every row's whole prefix at each step.
 */
import * as F from '../ops/index.ts';
import type { T5 } from '../models/hf/t5.ts';
import { gatherRows } from '../nn/kv-cache.ts';
import { Tensor } from '../tensor/tensor.ts';
import { CachedStepper, type Stepper } from './stepper.ts';

/** The cached steps of a T5 over its encoder's states (B, S, d) and the source padding (B, S), TRUE = padding. */
export function t5Stepper(model: T5, memory: Tensor, srcPadding: Tensor): CachedStepper {
  return new CachedStepper(model, memory, srcPadding, false, false);
}

/** Reference: the steps of a T5 re-running the decoder on the whole prefix (quadratic), no cache. */
export class T5FullStepper implements Stepper {
  private prefixes: number[][];
  private memory: Tensor;
  private srcPadding: Tensor;
  private rowOf: Int32Array;

  constructor(
    private readonly model: T5,
    private readonly fullMemory: Tensor,
    private readonly fullPadding: Tensor,
  ) {
    const B = fullMemory.shape[0];
    this.prefixes = Array.from({ length: B }, () => []);
    this.memory = fullMemory;
    this.srcPadding = fullPadding;
    this.rowOf = Int32Array.from({ length: B }, (_, i) => i);
  }

  get rows(): number {
    return this.prefixes.length;
  }

  get vocabSize(): number {
    return this.model.config.vocabSize;
  }

  step(last: Int32Array): Float32Array {
    return Float32Array.from(F.logSoftmax(this.logits(last), -1).dataSync<Float32Array>());
  }

  stepLogits(last: Int32Array): Float32Array {
    return Float32Array.from(this.logits(last).dataSync<Float32Array>());
  }

  /** The next-token logits (N, V) after feeding `last`. */
  private logits(last: Int32Array): Tensor {
    this.prefixes.forEach((p, i) => p.push(last[i]));
    const N = this.prefixes.length;
    const T = this.prefixes[0].length;
    const tgt = new Tensor(Int32Array.from(this.prefixes.flat()), [N, T], 'int32');
    const logits = this.model.decode(tgt, this.memory, this.srcPadding); // (N, T, V)
    return F.narrow(logits, 1, T - 1, 1).reshape(N, this.vocabSize);
  }

  reorder(rows: Int32Array): void {
    this.prefixes = Array.from(rows, (r) => this.prefixes[r].slice());
    this.rowOf = Int32Array.from(rows, (r) => this.rowOf[r]);
    this.memory = gatherRows(this.fullMemory, this.rowOf);
    this.srcPadding = gatherRows(this.fullPadding, this.rowOf);
  }
}
