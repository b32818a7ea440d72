/**
 * GEMM on the benchmark page: C (m, n) = op(A)·op(B) in three layouts, NN (A·B), NT (A·Bᵀ, what every Linear
 * computes) and TN (Aᵀ·B, a weight's gradient), with the same seeded operands on every engine:
 *   - qkv: the backend's `gemm` kernel on tensors of its device (webgpu; wasm as the CPU reference);
 *   - tfjs-backend-webgpu: `tf.matMul(a, b, transposeA, transposeB)`;
 *   - ONNX Runtime Web (WebGPU): a one-node graph, Gemm with transA/transB, operands already in GPU buffers,
 *     the output left on the GPU.
 * Check before timing: every engine's C against qkv wasm's, within K·2⁻²³·(|A|·|B|)ᵢⱼ per element (each side
 * is a length-K float32 sum, each within K·u·(|A|·|B|)ᵢⱼ of the exact value, u = 2⁻²⁴, whatever its order).
 */
import type { F32, GemmParams } from '../../src/backend/backend.ts';
import { getBackend, setBackend, tensor, type Tensor, zeros } from '../../src/index.ts';
import { GraphBuilder } from '../../src/io/onnx/builder.ts';
import {
  type Check,
  checkClose,
  log,
  type Part,
  randomArray,
  type Row,
  type TimeOptions,
  timeCall,
} from './page-common.ts';
import { ortGpuTensor, ortRepeat, ortSession, type Peers } from './page-peers.ts';

export const LAYOUTS = [
  ['NN', false, false],
  ['NT', false, true],
  ['TN', true, false],
] as const;

interface Timed {
  out: Float32Array;
  call: () => unknown;
  sync: () => Promise<unknown>;
  done?: () => void;
}

/** One product: A·B with either operand stored transposed (ta: A is k×m, tb: B is n×k). */
interface Gemm {
  A: Float32Array;
  B: Float32Array;
  m: number;
  n: number;
  k: number;
  ta: boolean;
  tb: boolean;
}

/** The stored shapes of A and B. */
const aShape = ({ m, k, ta }: Pick<Gemm, 'm' | 'k' | 'ta'>) => (ta ? [k, m] : [m, k]);
const bShape = ({ n, k, tb }: Pick<Gemm, 'n' | 'k' | 'tb'>) => (tb ? [n, k] : [k, n]);

function params(m: number, n: number, k: number, transA: boolean, transB: boolean): GemmParams {
  return { batch: 1, m, n, k, transA, transB, strideA: 0, strideB: 0, strideC: 0, accumulate: false };
}

async function qkvGemm(backend: string, { A, B, m, n, k, ta, tb }: Gemm): Promise<Timed> {
  await setBackend(backend);
  const K = getBackend();
  const a = tensor(A, aShape({ m, k, ta }));
  const b = tensor(B, bShape({ n, k, tb }));
  const c: Tensor = zeros(m, n);
  const p = params(m, n, k, ta, tb);
  const call = () => K.gemm(a.storage as F32, b.storage as F32, c.storage as F32, p);
  call();
  return { out: (await c.data()) as Float32Array, call, sync: () => c.data() };
}

async function tfjsGemm(tf: NonNullable<Peers['tf']>, g: Gemm): Promise<Timed> {
  const { A, B, ta, tb } = g;
  const a = tf.tensor(A, aShape(g));
  const b = tf.tensor(B, bShape(g));
  let last = tf.matMul(a, b, ta, tb);
  const out = (await last.data()) as Float32Array;
  const call = () => {
    last.dispose();
    last = tf.matMul(a, b, ta, tb);
  };
  return {
    out,
    call,
    sync: () => last.data(),
    done: () => {
      for (const t of [a, b, last]) t.dispose();
    },
  };
}

function gemmGraph(m: number, n: number, k: number, ta: boolean, tb: boolean): Uint8Array {
  const g = new GraphBuilder('gemm');
  const a = g.input('A', 'float32', aShape({ m, k, ta }));
  const b = g.input('B', 'float32', bShape({ n, k, tb }));
  g.output('C', g.op('Gemm', [a, b], 'c', { transA: ta ? 1 : 0, transB: tb ? 1 : 0 }), 'float32', [m, n]);
  return g.toBytes();
}

async function ortGemm(o: NonNullable<Peers['ort']>, g: Gemm): Promise<Timed> {
  const { A, B, m, n, k, ta, tb } = g;
  const session = await ortSession(o, gemmGraph(m, n, k, ta, tb));
  const feeds = { A: await ortGpuTensor(o, A, aShape(g)), B: await ortGpuTensor(o, B, bShape(g)) };
  return ortRepeat(session, feeds, 'C');
}

/** GEMM rows for square sizes `sizes` in NN, NT and TN. */
export async function gemmWorkload(sizes: number[], peers: Peers, time: TimeOptions): Promise<Part> {
  const rows: Row[] = [];
  const checks: Check[] = [];
  for (const s of sizes) {
    const [m, n, k] = [s, s, s];
    for (const [layout, ta, tb] of LAYOUTS) {
      const name = `gemm ${m}×${k}×${n} ${layout}`;
      const A = randomArray(m * k, 11 * s + 1);
      const B = randomArray(k * n, 13 * s + 2);
      const g: Gemm = { A, B, m, n, k, ta, tb };
      const ref = await qkvGemm('wasm', g);
      const abs = await qkvGemm('wasm', { ...g, A: A.map(Math.abs), B: B.map(Math.abs) });
      const bound = (i: number) => k * 2 ** -23 * abs.out[i]! + 1e-30;
      const boundText = 'K·2⁻²³·(|A|·|B|)ᵢⱼ';
      const engines: ['qkv' | 'tfjs' | 'ort', () => Promise<Timed>][] = [['qkv', () => qkvGemm('webgpu', g)]];
      const { tf, ort } = peers;
      if (tf) engines.push(['tfjs', () => tfjsGemm(tf, g)]);
      if (ort) engines.push(['ort', () => ortGemm(ort, g)]);
      const row: Row = { workload: name, unit: 'GFLOP/s', qkv: null, tfjs: null, ort: null, wasm: null, counts: {} };
      const gflops = (ms: number) => (2 * m * n * k) / (ms * 1e6);
      for (const [who, make] of engines) {
        const e = await make();
        checks.push(checkClose(`${name}: ${who} against qkv wasm`, e.out, ref.out, bound, boundText));
        if (who === 'qkv') await setBackend('webgpu');
        const t = await timeCall(e.call, e.sync, time);
        row[who] = gflops(t.ms);
        row.counts[who] = t.counts;
        e.done?.();
      }
      await setBackend('wasm');
      row.wasm = gflops((await timeCall(ref.call, ref.sync, time)).ms);
      log(
        `${name}: qkv webgpu ${row.qkv?.toFixed(1)}, tfjs ${row.tfjs?.toFixed(1) ?? '—'}, ` +
          `ORT ${row.ort?.toFixed(1) ?? '—'}, qkv wasm ${row.wasm.toFixed(1)} GFLOP/s`,
      );
      rows.push(row);
    }
  }
  return { rows, checks };
}
