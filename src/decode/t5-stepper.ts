/**
 * generate()'s steps over a Hugging Face T5 (models/hf/t5.ts), for decode/hf-search.ts: each step re-runs the
 * decoder on every row's whole prefix (no key/value cache yet), the padding id not ruled out (generate()'s rule).
 */
import * as F from '../ops/index.ts';
import type { T5 } from '../models/hf/t5.ts';
import { Tensor } from '../tensor/tensor.ts';
import type { Stepper } from './stepper.ts';

/** The steps of a T5 over its encoder's states (B, S, d) and the source padding (B, S). */
export class T5Stepper implements Stepper {
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
    const [, S, d] = this.fullMemory.shape;
    const mem = this.fullMemory.dataSync<Float32Array>();
    const pad = this.fullPadding.dataSync<Uint8Array>();
    const m = new Float32Array(rows.length * S * d);
    const p = new Uint8Array(rows.length * S);
    this.rowOf.forEach((src, i) => {
      m.set(mem.subarray(src * S * d, (src + 1) * S * d), i * S * d);
      p.set(pad.subarray(src * S, (src + 1) * S), i * S);
    });
    this.memory = new Tensor(m, [rows.length, S, d], 'float32');
    this.srcPadding = new Tensor(p, [rows.length, S], this.fullPadding.dtype);
  }
}
