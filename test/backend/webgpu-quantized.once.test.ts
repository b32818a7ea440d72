/**
 * The webgpu quantized linear kernels (src/backend/webgpu/quantized.ts) against their js twin
 * (src/backend/js/quantized.ts), bit for bit: the kernels do the twin's integer arithmetic and its float32
 * operations in its order (the file comment says how, and what WGSL would still allow). Weights are random
 * float32 quantized by the twin's own quantizers (quantizeInt8, quantizeQ4, which ops/matmul.ts's
 * quantizeWeight calls), uploaded packed as the device keeps them; rows 1 to 8 take the GEMV kernels,
 * more the tiled ones. Edge rows: zeros, values whose 127/max|x| overflows float32, exact halves (ties of
 * the rounding), and sums past 2^24 (rounded when they become float32). q4 scales both ways: float16 as the
 * quantizer makes them (two a word on the device, subnormal halves included), and float32 ones (q4 files of
 * qkv before float16 scales), arbitrary floats.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { F16, F32, I32, I8, Q4 } from '../../src/backend/backend.ts';
import {
  embeddingInt8 as jsEmbeddingInt8,
  embeddingQ4 as jsEmbeddingQ4,
  linearInt8 as jsInt8,
  linearQ4 as jsQ4,
  quantizeInt8,
  quantizeQ4,
} from '../../src/backend/js/quantized.ts';
import { u } from '../../src/backend/webgpu/context.ts';
import { buf } from '../../src/backend/webgpu/device.ts';
import { DIV_RN, I2F, embeddingInt8, embeddingQ4, linearInt8, linearQ4 } from '../../src/backend/webgpu/quantized.ts';
import { halvesToFloat32 } from '../../src/tensor/half.ts';
import { rng } from '../helpers/random.ts';
import { ctx, down, out, sameBits, up } from './webgpu-twins.ts';

const rand = rng(4949);
const randomArray = (n: number, lo = -1, hi = 1) => Float32Array.from({ length: n }, () => lo + rand() * (hi - lo));

type Kind = 'int8' | 'q4';

/** q4 scales as uploaded: the quantizer's halves (float16), or float32 ones that are no halves. */
type Scales = 'float16' | 'float32';

/** The quantizer's half scales, or float32 scales near them that are not halves (the js twin's input). */
function q4Scales(halves: Uint16Array, scales: Scales): Uint16Array | Float32Array {
  if (scales === 'float16') return halves;
  return halvesToFloat32(halves).map((v) => Math.fround(v * (1 + 1e-4 * rand())));
}

/** Scales on the device, as their dtype. */
const upScales = (s: Uint16Array | Float32Array) => (s instanceof Uint16Array ? up(s, 'float16') : up(s)) as F16 | F32;

/** Both kernels on x (rows, inF) and a random weight (outF, inF), compared bit for bit. */
async function check(
  kind: Kind,
  x: Float32Array,
  rows: number,
  inF: number,
  outF: number,
  withBias: boolean,
  what: string,
  w = randomArray(outF * inF),
  scales: Scales = 'float16',
): Promise<void> {
  const bias = withBias ? randomArray(outF) : null;
  const init = randomArray(rows * outF + 2);
  const expected = init.slice();
  const gpuOut = out(init);
  if (kind === 'int8') {
    const { q, scale } = quantizeInt8(w, outF, inF);
    jsInt8(x, q, scale, bias, expected, rows, inF, outF);
    const gb = bias ? (up(bias) as F32) : null;
    linearInt8(up(x) as F32, up(q, 'int8') as I8, up(scale) as F32, gb, gpuOut as F32, rows, inF, outF);
  } else {
    const { q, scale: halves } = quantizeQ4(w, outF, inF);
    const scale = q4Scales(halves, scales);
    jsQ4(x, q, scale, bias, expected, rows, inF, outF);
    const gb = bias ? (up(bias) as F32) : null;
    linearQ4(up(x) as F32, up(q, 'q4') as Q4, upScales(scale), gb, gpuOut as F32, rows, inF, outF);
  }
  sameBits(await down(gpuOut, init.length), expected, `${what}${kind === 'q4' ? ` (${scales} scales)` : ''}`);
}

for (const kind of ['int8', 'q4'] as Kind[]) {
  test(`${kind}: random weights and rows, GEMV (rows <= 8) and tiled, bias or none, bit for bit`, async () => {
    for (const rows of [1, 3, 8, 9, 17, 40])
      for (const inF of [32, 96, 640])
        for (const outF of [5, 37, 67]) {
          if (inF === 640 && outF !== 37) continue; // 20 blocks of 32: crosses the GEMV's chunks of 16
          const withBias = (rows + outF) % 2 === 0;
          const what = `${rows}x${inF}->${outF}`;
          const w = randomArray(outF * inF);
          await check(kind, randomArray(rows * inF), rows, inF, outF, withBias, what, w);
          if (kind === 'q4') await check(kind, randomArray(rows * inF), rows, inF, outF, withBias, what, w, 'float32');
        }
  });

  test(`${kind}: rows of zeros, of tiny values (127/max|x| overflows), of exact halves; sums past 2^24`, async () => {
    const inF = 64;
    const rows = 4;
    const x = randomArray(rows * inF);
    x.fill(0, 0, inF); // row 0: zeros (sx = 0)
    for (let i = inF; i < 2 * inF; i++) x[i] = (rand() - 0.5) * 1e-37; // row 1: q = 0 (127/max|x| is +∞)
    // Row 2: max 127, so inv = 1 and every x·inv is itself: halves tie, and round to even.
    for (let i = 0; i < inF; i++) x[2 * inF + i] = i === 0 ? 127 : (i % 9) - 4 + 0.5 * ((i % 2) * 2 - 1);
    for (let i = 3 * inF; i < 4 * inF; i++) x[i] = (rand() - 0.5) * 3e-33; // row 3: 127/max|x| finite, ~1e35
    for (const r of [1, 9]) {
      const xr = new Float32Array(r * inF);
      for (let i = 0; i < r * inF; i++) xr[i] = x[i % (rows * inF)];
      await check(kind, xr, r, inF, 7, true, `edge rows x${r}`);
    }
    // |Σ q·w| up to 127²·2048 > 2^24: the int8 sum is rounded as it becomes float32.
    const big = 2048;
    for (const r of [1, 9]) {
      const xb = randomArray(r * big, 0.9, 1);
      const wb = randomArray(5 * big, 0.9, 1);
      await check(kind, xb, r, big, 5, false, `sums past 2^24 x${r}`, wb);
    }
    // q4: weights so small that their half scales are subnormal (max|w|/7 below 2^-14), widened exactly.
    if (kind === 'q4')
      for (const r of [1, 9]) {
        const tiny = randomArray(7 * inF, -2e-5, 2e-5);
        await check(kind, randomArray(r * inF), r, inF, 7, true, `subnormal half scales x${r}`, tiny);
      }
  });
}

test('int8: inF not a multiple of 4 (weight rows that start inside a word)', async () => {
  for (const rows of [1, 5, 33])
    for (const inF of [1, 7, 33, 70])
      await check('int8', randomArray(rows * inF), rows, inF, 9, rows === 5, `unaligned ${rows}x${inF}->9`);
});

test('no rows or outputs: nothing written; short storage and a bad inF name the argument', async () => {
  await check('int8', new Float32Array(0), 0, 32, 5, true, 'rows=0');
  await check('q4', randomArray(64), 2, 32, 0, false, 'outF=0');
  const x = up(randomArray(2 * 32)) as F32;
  const { q, scale } = quantizeQ4(randomArray(3 * 32), 3, 32);
  assert.throws(
    () => linearQ4(x, up(q, 'q4') as Q4, upScales(scale), null, up(new Float32Array(5)) as F32, 2, 32, 3),
    /linearQ4: out has 5 elements, expected at least 6/,
  );
  assert.throws(
    () => linearQ4(x, up(q, 'q4') as Q4, upScales(scale), null, up(new Float32Array(6)) as F32, 2, 30, 3),
    /linearQ4: inF 30 is not a multiple of 32/,
  );
  assert.throws(
    () =>
      linearQ4(x, up(q, 'q4') as Q4, upScales(scale.subarray(0, 2)), null, up(new Float32Array(6)) as F32, 2, 32, 3),
    /linearQ4: wScale has 2 elements, expected at least 3/,
  );
});

test('quantized tables: rows picked by ids (repeats, first and last row, a zero row), bit for bit', async () => {
  for (const [num, dim] of [
    [7, 32],
    [50, 96],
    [3, 5], // int8 only: rows that start inside a word
  ]) {
    const w = randomArray(num * dim, -3, 3);
    w.fill(0, dim, 2 * dim); // row 1: zeros (scale 0)
    const ids = Int32Array.from([0, num - 1, 1, 2, 2, num - 1, 0, Math.floor(num / 2)]);
    const init = randomArray(ids.length * dim + 3);
    for (const kind of dim % 32 === 0 ? ['int8', 'q4', 'q4-float32'] : ['int8']) {
      const expected = init.slice();
      const gpuOut = out(init);
      if (kind === 'int8') {
        const { q, scale } = quantizeInt8(w, num, dim);
        jsEmbeddingInt8(q, scale, ids, expected, dim);
        embeddingInt8(up(q, 'int8') as I8, up(scale) as F32, up(ids, 'int32') as I32, gpuOut as F32, dim);
      } else {
        const { q, scale: halves } = quantizeQ4(w, num, dim);
        const scale = q4Scales(halves, kind === 'q4' ? 'float16' : 'float32');
        jsEmbeddingQ4(q, scale, ids, expected, dim);
        embeddingQ4(up(q, 'q4') as Q4, upScales(scale), up(ids, 'int32') as I32, gpuOut as F32, dim);
      }
      sameBits(await down(gpuOut, init.length), expected, `${kind} table ${num}x${dim}`);
    }
  }
});

test("the kernels' own float32 steps: div_rn is the correctly rounded quotient, i2f the rounded int", async () => {
  // div_rn on positive normal floats of every exponent (quotients overflowing, subnormal, normal,
  // exact halves of the subnormals' last place), and the
  // quotients the kernels take (127/max|x|, max|x|/127); i2f on integers of every magnitude and sign.
  const n = 20000;
  const a = new Uint32Array(n);
  const b = new Uint32Array(n);
  const bits = new Uint32Array(1);
  const asF = new Float32Array(bits.buffer);
  const normal = () => 0x00800000 + Math.floor(rand() * (0x7f800000 - 0x00800000));
  for (let i = 0; i < n; i++) {
    a[i] = normal();
    b[i] = normal();
    if (i % 4 === 1) a[i] = 0x42fe0000; // 127
    if (i % 4 === 2) b[i] = 0x42fe0000;
    if (i % 8 === 3) {
      // b a power of two putting the exact quotient at the top of the subnormals: exact ties, to even.
      const ea = 1 + Math.floor(rand() * 124);
      a[i] = (ea << 23) | (a[i] & 0x7fffff);
      b[i] = (ea + 127 + Math.floor(rand() * 4)) << 23;
    }
  }
  const v = Int32Array.from({ length: n }, (_, i) => Math.floor((rand() - 0.5) * 2 ** (1 + (i % 32))));
  const code = /* wgsl */ `
struct P { n: u32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> a: array<u32>;
@group(0) @binding(2) var<storage, read> b: array<u32>;
@group(0) @binding(3) var<storage, read> v: array<i32>;
@group(0) @binding(4) var<storage, read_write> q: array<u32>;
@group(0) @binding(5) var<storage, read_write> f: array<f32>;
${DIV_RN}
${I2F}
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) gid: vec3u) {
  let i = gid.x;
  if (i < p.n) { q[i] = div_rn(a[i], b[i]); f[i] = i2f(v[i]); }
}`;
  const q = up(new Int32Array(n), 'int32');
  const fo = up(new Float32Array(n));
  ctx.run(
    ctx.program('test-div-rn', code),
    [up(new Int32Array(a.buffer), 'int32'), up(new Int32Array(b.buffer), 'int32'), up(v, 'int32'), q, fo].map(buf),
    [u(n)],
    [Math.ceil(n / 64)],
  );
  const gotQ = new Uint32Array((await down<Int32Array>(q, n, 'int32')).buffer);
  const gotF = await down(fo, n);
  for (let i = 0; i < n; i++) {
    bits[0] = a[i];
    const x = asF[0];
    bits[0] = b[i];
    asF[0] = Math.fround(x / asF[0]);
    if (gotQ[i] !== bits[0])
      assert.fail(
        `div_rn(${a[i].toString(16)}, ${b[i].toString(16)}) = ${gotQ[i].toString(16)}, expected ${bits[0].toString(16)}`,
      );
    if (!Object.is(gotF[i], Math.fround(v[i]))) assert.fail(`i2f(${v[i]}) = ${gotF[i]}, expected ${Math.fround(v[i])}`);
  }
});
