/**
 * ONNX Runtime (onnxruntime-node) on qkv's in-memory export of a translation model, as an OrtSeq2Seq driven by
 * qkv's search code: for bench/onnx.ts and bench/translate-quantized.ts. Sessions as the CLI makes them (no
 * spinning), with `threads` intra-op threads.
 */
import * as ort from 'onnxruntime-node';
import { SESSION_OPTIONS } from '../src/cli/onnxruntime.ts';
import { OrtSeq2Seq } from '../src/decode/onnxruntime.ts';
import type { exportSeq2SeqOnnx } from '../src/io/onnx/export.ts';

export async function ortSeq2Seq(exp: ReturnType<typeof exportSeq2SeqOnnx>, threads: number): Promise<OrtSeq2Seq> {
  const session = (f: string) =>
    ort.InferenceSession.create(exp.files[f]!, { ...SESSION_OPTIONS, intraOpNumThreads: threads });
  return new OrtSeq2Seq(
    ort,
    {
      encoder: await session(exp.manifest.graphs.encoder),
      decoder: await session(exp.manifest.graphs.decoder),
      decoderWithPast: await session(exp.manifest.graphs.decoderWithPast),
    },
    exp.manifest,
  );
}
