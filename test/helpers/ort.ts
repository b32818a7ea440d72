/** What the ONNX Runtime tests share: int64 inputs from qkv's int32 ids, and the graphs kept on disk for the checker. */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import type { Tensor } from '../../src/tensor/tensor.ts';
import { tempDir } from '../e2e/tiny-model.ts';

/** qkv's int32 ids (any shape) as ONNX Runtime's int64 tensor. */
export function int64Tensor(t: Tensor): ort.Tensor {
  return new ort.Tensor(
    'int64',
    BigInt64Array.from(t.dataSync<Int32Array>(), (x) => BigInt(x)),
    t.shape,
  );
}

/** Graphs written to a scratch folder as a test makes them, for ONNX's checker at the end (`written`). */
export class KeptGraphs {
  readonly dir: string;
  readonly written: string[] = [];

  constructor(prefix: string) {
    this.dir = tempDir(prefix);
  }

  /** Write `bytes` as `name`.onnx (name made file-safe) and give them back. */
  keep(name: string, bytes: Uint8Array): Uint8Array {
    const p = join(this.dir, `${name.replace(/[^a-z0-9]+/gi, '_')}.onnx`);
    writeFileSync(p, bytes);
    this.written.push(p);
    return bytes;
  }
}
