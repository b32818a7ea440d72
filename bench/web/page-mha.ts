/**
 * Multi-head self-attention on the benchmark page, the layer of `npm run bench`'s MHA rows:
 * `nn.MultiheadAttention(E, H, { batchFirst: true })` on an input (B, L, E), no weights returned, the same
 * seeded weights and input on every engine:
 *   - qkv (webgpu; wasm as the CPU reference): forward, and forward + backward of sum(out·r) (the gradients of
 *     the input and of every weight), each call inside a memoryScope as the trainers run;
 *   - tfjs-backend-webgpu: the same equations in tf ops (in-projection, split heads, softmax(q·kᵀ/√d)·v,
 *     out-projection), the backward by `tf.grads` over the input and the four weights;
 *   - ONNX Runtime Web (WebGPU): forward only (it does not train), the graph of qkv's ONNX export of this
 *     layer (src/io/onnx/layers.ts: one in-projection MatMul, Split, MatMul, Softmax, MatMul, out-projection).
 * Check before timing: outputs and input gradients against qkv wasm's within 1e-4 + 1e-4·|ref| (the bound
 * `npm run bench` holds wasm to against js on this layer).
 */
import type { Tensor as TfTensor } from '@tensorflow/tfjs-core';
import { manualSeed, memoryScope, nn, noGrad, setBackend, type Tensor, tensor } from '../../src/index.ts';
import { GraphBuilder } from '../../src/io/onnx/builder.ts';
import { attend, projectSelf, Weights } from '../../src/io/onnx/layers.ts';
import {
  type Check,
  checkAtolRtol,
  log,
  type Part,
  randomArray,
  type Row,
  type TimeOptions,
  timeCall,
} from './page-common.ts';
import { ortGpuTensor, ortRepeat, ortSession, type Peers } from './page-peers.ts';

export interface MhaShape {
  B: number;
  L: number;
  E: number;
  H: number;
}

interface Run {
  out: Float32Array;
  dx: Float32Array | null;
  call: () => unknown;
  sync: () => Promise<unknown>;
  done?: () => void;
}

/** The layer with seed 5's weights, on `backend` (made on wasm, the same values moved there). */
async function layer(backend: string, s: MhaShape): Promise<nn.MultiheadAttention> {
  await setBackend('wasm');
  manualSeed(5);
  const mha = new nn.MultiheadAttention(s.E, s.H, { batchFirst: true, dropout: 0 });
  if (backend !== 'wasm') mha.to(backend);
  await setBackend(backend);
  return mha;
}

async function qkvRun(backend: string, s: MhaShape, X: Float32Array, R: Float32Array, backward: boolean): Promise<Run> {
  const mha = await layer(backend, s);
  const x = tensor(X, [s.B, s.L, s.E]);
  const r = tensor(R, [s.B, s.L, s.E]);
  const fwd = () => mha.forward(x, x, x, { needWeights: false }).output;
  if (!backward) {
    let last: Tensor = memoryScope(() => noGrad(fwd));
    const out = (await last.data()) as Float32Array;
    return { out, dx: null, call: () => (last = memoryScope(() => noGrad(fwd))), sync: () => last.data() };
  }
  x.requiresGrad_();
  const call = () =>
    memoryScope(() => {
      mha.zeroGrad();
      x.grad = null;
      fwd().mul(r).sum().backward();
    });
  call();
  const dx = (await x.grad!.data()) as Float32Array;
  const out = (await memoryScope(() => noGrad(fwd)).data()) as Float32Array;
  return { out, dx, call, sync: () => x.grad!.data() };
}

function weightsOf(mha: nn.MultiheadAttention): Record<string, Tensor> {
  return Object.fromEntries(Object.entries(mha.stateDict()).map(([k, v]) => [`attn.${k}`, v]));
}

async function tfjsRun(
  tf: NonNullable<Peers['tf']>,
  s: MhaShape,
  X: Float32Array,
  R: Float32Array,
  w: Record<string, Tensor>,
  backward: boolean,
): Promise<Run> {
  const { B, L, E, H } = s;
  const D = E / H;
  const t = (name: string) => tf.tensor(w[name]!.dataSync() as Float32Array, w[name]!.shape.slice());
  const win = t('attn.in_proj_weight');
  const bin = t('attn.in_proj_bias');
  const wo = t('attn.out_proj.weight');
  const bo = t('attn.out_proj.bias');
  const x = tf.tensor(X, [B, L, E]);
  const r = tf.tensor(R, [B, L, E]);
  const mha = (x: TfTensor, win: TfTensor, bin: TfTensor, wo: TfTensor, bo: TfTensor) => {
    const qkv = tf.add(tf.matMul(tf.reshape(x, [B * L, E]), win, false, true), bin);
    const [q, k, v] = tf.split(qkv, 3, 1).map((u) => tf.transpose(tf.reshape(u, [B, L, H, D]), [0, 2, 1, 3]));
    const p = tf.softmax(tf.mul(tf.matMul(q!, k!, false, true), 1 / Math.sqrt(D)));
    const o = tf.reshape(tf.transpose(tf.matMul(p, v!), [0, 2, 1, 3]), [B * L, E]);
    return tf.reshape(tf.add(tf.matMul(o, wo, false, true), bo), [B, L, E]);
  };
  const kept = [win, bin, wo, bo, x, r];
  const done = (also: TfTensor[]) => () => {
    for (const u of [...kept, ...also]) u.dispose();
  };
  const forward = tf.tidy(() => mha(x, win, bin, wo, bo));
  const out = (await forward.data()) as Float32Array;
  if (!backward) {
    let last = forward;
    const call = () => {
      last.dispose();
      last = tf.tidy(() => mha(x, win, bin, wo, bo));
    };
    return { out, dx: null, call, sync: () => last.data(), done: () => done([last])() };
  }
  forward.dispose();
  const g = tf.grads((...a: TfTensor[]) => tf.sum(tf.mul(mha(a[0]!, a[1]!, a[2]!, a[3]!, a[4]!), r)));
  let grads = g([x, win, bin, wo, bo]);
  const dx = (await grads[0]!.data()) as Float32Array;
  const call = () => {
    for (const u of grads) u.dispose();
    grads = g([x, win, bin, wo, bo]);
  };
  return { out, dx, call, sync: () => grads[0]!.data(), done: () => done(grads)() };
}

function mhaGraph(s: MhaShape, w: Record<string, Tensor>): Uint8Array {
  const g = new GraphBuilder('mha');
  const weights = new Weights(g, w, 'benchmark MHA');
  const x = g.input('x', 'float32', [s.B, s.L, s.E]);
  const p = projectSelf(g, weights, x, 'attn', s.H, s.E);
  const { out } = attend(g, weights, 'attn', p.q, p.k, p.v, null, s.E, s.H);
  g.output('y', out, 'float32', [s.B, s.L, s.E]);
  return g.toBytes();
}

async function ortRun(
  o: NonNullable<Peers['ort']>,
  s: MhaShape,
  X: Float32Array,
  w: Record<string, Tensor>,
): Promise<Run> {
  const session = await ortSession(o, mhaGraph(s, w));
  return { ...(await ortRepeat(session, { x: await ortGpuTensor(o, X, [s.B, s.L, s.E]) }, 'y')), dx: null };
}

/** MHA forward and forward+backward rows for each shape. */
export async function mhaWorkload(shapes: MhaShape[], peers: Peers, time: TimeOptions): Promise<Part> {
  const rows: Row[] = [];
  const checks: Check[] = [];
  for (const s of shapes) {
    const X = randomArray(s.B * s.L * s.E, 21);
    const R = randomArray(s.B * s.L * s.E, 22);
    const w = weightsOf(await layer('wasm', s));
    for (const backward of [false, true]) {
      const name = `MHA (${s.B}, ${s.L}, ${s.E}, ${s.H}) ${backward ? 'fwd+bwd' : 'fwd'}`;
      const row: Row = { workload: name, unit: 'ms', qkv: null, tfjs: null, ort: null, wasm: null, counts: {} };
      const ref = await qkvRun('wasm', s, X, R, backward);
      const engines: ['qkv' | 'tfjs' | 'ort', () => Promise<Run>][] = [
        ['qkv', () => qkvRun('webgpu', s, X, R, backward)],
      ];
      const { tf, ort } = peers;
      if (tf) engines.push(['tfjs', () => tfjsRun(tf, s, X, R, w, backward)]);
      if (ort && !backward) engines.push(['ort', () => ortRun(ort, s, X, w)]);
      if (backward) row.note = 'ONNX Runtime Web does not train';
      for (const [who, make] of engines) {
        const e = await make();
        checks.push(checkAtolRtol(`${name}: ${who} output against qkv wasm`, e.out, ref.out, 1e-4, 1e-4));
        if (backward)
          checks.push(checkAtolRtol(`${name}: ${who} input gradient against qkv wasm`, e.dx!, ref.dx!, 1e-4, 1e-4));
        if (who === 'qkv') await setBackend('webgpu');
        const t = await timeCall(e.call, e.sync, time);
        row[who] = t.ms;
        row.counts[who] = t.counts;
        e.done?.();
      }
      await setBackend('wasm');
      row.wasm = (await timeCall(ref.call, ref.sync, time)).ms;
      log(
        `${name}: qkv webgpu ${row.qkv?.toFixed(2)}, tfjs ${row.tfjs?.toFixed(2) ?? '—'}, ` +
          `ORT ${row.ort?.toFixed(2) ?? '—'}, qkv wasm ${row.wasm.toFixed(2)} ms`,
      );
      rows.push(row);
    }
  }
  return { rows, checks };
}
