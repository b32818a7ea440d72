/**
 * The peers on the benchmark page, each on its own WebGPU device: TensorFlow.js with
 * @tensorflow/tfjs-backend-webgpu, and ONNX Runtime Web's WebGPU execution provider (the engine
 * transformers.js runs on), with graphs written by qkv's ONNX builder (src/io/onnx/). Either may be
 * missing in a browser (no WebGPU, a failed load): the page then runs without it and says why.
 */
/// <reference types="@webgpu/types" />
import * as tf from '@tensorflow/tfjs-core';
// Gradients are registered by a module of their own (what @tensorflow/tfjs imports for its users).
import '@tensorflow/tfjs-core/dist/register_all_gradients';
import '@tensorflow/tfjs-backend-webgpu';
import * as ort from 'onnxruntime-web/webgpu';
import { GraphBuilder } from '../../src/io/onnx/builder.ts';

export type Tf = typeof tf;
export type Ort = typeof ort;

export interface Peers {
  tf: Tf | null;
  ort: Ort | null;
  /** Why a peer is missing, by name; versions of those present. */
  notes: string[];
  versions: Record<string, string>;
}

/** Load both peers on WebGPU (ONNX Runtime's WebAssembly half, which Vite emits beside the page, on one thread). */
export async function loadPeers(): Promise<Peers> {
  const notes: string[] = [];
  const versions: Record<string, string> = {};
  let tfOk: Tf | null = null;
  try {
    if (!(await tf.setBackend('webgpu'))) throw new Error('tf.setBackend("webgpu") returned false');
    await tf.ready();
    tfOk = tf;
    versions.tfjs = `${tf.version_core} (tfjs-backend-webgpu)`;
  } catch (e) {
    notes.push(`tfjs-backend-webgpu did not load: ${(e as Error).message}`);
  }
  let ortOk: Ort | null = null;
  try {
    ort.env.wasm.numThreads = 1;
    ort.env.webgpu.powerPreference = 'high-performance';
    // A first session makes ONNX Runtime's device (whose buffers the benchmarks' inputs are written to).
    const g = identityGraph();
    const s = await ort.InferenceSession.create(g, { executionProviders: ['webgpu'] });
    const out = await s.run({ x: new ort.Tensor('float32', new Float32Array([1, 2]), [2]) });
    if (String((out.y!.data as Float32Array)[1]) !== '2') throw new Error('identity graph gave the wrong value');
    await s.release();
    ortOk = ort;
    versions['onnxruntime-web'] = `${ort.env.versions.web ?? ort.env.versions.common} (WebGPU provider)`;
  } catch (e) {
    notes.push(`onnxruntime-web's WebGPU provider did not load: ${(e as Error).message}`);
  }
  return { tf: tfOk, ort: ortOk, notes, versions };
}

function identityGraph(): Uint8Array {
  const g = new GraphBuilder('identity');
  const x = g.input('x', 'float32', [2]);
  g.output('y', g.op('Identity', [x], 'id'), 'float32', [2]);
  return g.toBytes();
}

/** ONNX Runtime's GPU device (made by its first WebGPU session). */
export function ortDevice(o: Ort): Promise<GPUDevice> {
  return o.env.webgpu.device as Promise<GPUDevice>;
}

/** A float32 tensor of ONNX Runtime in a buffer of its GPU device (an input that is already on the GPU). */
export async function ortGpuTensor(o: Ort, data: Float32Array, dims: number[]): Promise<ort.Tensor> {
  const device = await ortDevice(o);
  const buffer = device.createBuffer({
    size: Math.max(16, Math.ceil(data.byteLength / 16) * 16),
    usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST,
  });
  device.queue.writeBuffer(buffer, 0, data as Float32Array<ArrayBuffer>);
  return o.Tensor.fromGpuBuffer(buffer, { dataType: 'float32', dims, dispose: () => buffer.destroy() });
}

/** A session on the WebGPU provider whose outputs stay on the GPU (read with `await t.getData()`). */
export function ortSession(
  o: Ort,
  graph: Uint8Array,
  outputsOnGpu: true | string[] = true,
): Promise<ort.InferenceSession> {
  return o.InferenceSession.create(graph, {
    executionProviders: ['webgpu'],
    graphOptimizationLevel: 'all',
    preferredOutputLocation:
      outputsOnGpu === true ? 'gpu-buffer' : Object.fromEntries(outputsOnGpu.map((n) => [n, 'gpu-buffer' as const])),
  });
}

/**
 * A session run again and again on the same feeds, as the pages time it: the first run's `output` values,
 * `call` (runs it again, freeing the previous output), `sync` (reads the last output) and `done` (frees the
 * output, the feeds and the session).
 */
export async function ortRepeat(
  session: ort.InferenceSession,
  feeds: Record<string, ort.Tensor>,
  output: string,
): Promise<{ out: Float32Array; call: () => Promise<void>; sync: () => Promise<Float32Array>; done: () => void }> {
  let last = (await session.run(feeds))[output]!;
  const out = await ortData(last);
  return {
    out,
    call: async () => {
      last.dispose();
      last = (await session.run(feeds))[output]!;
    },
    sync: () => ortData(last),
    done: () => {
      last.dispose();
      for (const f of Object.values(feeds)) f.dispose();
      void session.release();
    },
  };
}

/** The float32 values of an ONNX Runtime tensor, wherever it lives. */
export async function ortData(t: ort.Tensor): Promise<Float32Array> {
  return (await t.getData()) as Float32Array;
}
