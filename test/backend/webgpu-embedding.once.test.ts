/**
 * The webgpu embedding (src/backend/webgpu/embedding.ts) against its js twin, bit for bit: the gather is a
 * copy, and the backward adds each id's rows in position order onto dweight as the js twin does, every
 * float32 add correctly rounded on both sides, so no tolerance is needed. Widths of 1, 7, 65 and 300,
 * 1 to 1000 positions (chains of repeated ids crossing the 256-position tiles of the next-occurrence scan),
 * small vocabularies (many repeats), one id everywhere, paddingIdx −1 and a real id that repeats, dweight
 * accumulated into non-zero values, and empty inputs.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rng, uniformArray } from '../helpers/random.ts';
import { down, js, out, sameBits, up } from './webgpu-twins.ts';
import type { F32, I32 } from '../../src/backend/backend.ts';
import { embedding, embeddingBackward } from '../../src/backend/webgpu/embedding.ts';

const rand = rng(41);
const randn = (n: number, scale = 1) => uniformArray(rand, n, scale);

const gpuF = (x: Float32Array) => up(x) as F32;
const outF = (x: Float32Array) => out(x) as F32;
const gpuI = (x: Int32Array) => up(x, 'int32') as I32;

interface Case {
  vocab: number;
  dim: number;
  n: number;
  pad: number;
  same?: boolean;
}

const CASES: Case[] = [];
for (const dim of [1, 7, 65, 300])
  for (const [vocab, n] of [
    [1, 1],
    [13, 40],
    [50, 300],
  ])
    for (const pad of [-1, 3 % vocab]) CASES.push({ vocab, dim, n, pad });
CASES.push(
  { vocab: 9, dim: 5, n: 1000, pad: 4 },
  { vocab: 600, dim: 3, n: 1000, pad: -1 },
  { vocab: 20, dim: 33, n: 700, pad: 7, same: true },
  { vocab: 20, dim: 33, n: 700, pad: -1, same: true },
);

test('webgpu embedding and embeddingBackward match js bit for bit (repeated ids, paddingIdx)', async () => {
  for (const { vocab, dim, n, pad, same } of CASES) {
    const what = `vocab ${vocab} dim ${dim} n ${n} pad ${pad}${same ? ' one id' : ''}`;
    const weight = randn(vocab * dim, 2);
    const ids = Int32Array.from({ length: n }, () => (same ? 7 : Math.floor(rand() * vocab)));
    if (pad >= 0 && !same) for (let k = 0; k < n; k += 4) ids[k] = pad; // the padding id repeats
    const gIds = gpuI(ids);

    const eOut = new Float32Array(n * dim);
    js.embedding(weight, ids, eOut, dim);
    const o = outF(randn(n * dim));
    embedding(gpuF(weight), gIds, o, dim);
    sameBits(await down(o, n * dim), eOut, `embedding ${what}`);

    const dy = randn(n * dim, 3);
    const dw0 = randn(vocab * dim);
    const eDw = dw0.slice();
    js.embeddingBackward(dy, ids, eDw, dim, pad);
    const dw = gpuF(dw0);
    embeddingBackward(gpuF(dy), gIds, dw, dim, pad);
    const got = await down(dw, vocab * dim);
    sameBits(got, eDw, `embeddingBackward ${what}`);
    if (pad >= 0)
      sameBits(got.subarray(pad * dim, (pad + 1) * dim), dw0.subarray(pad * dim, (pad + 1) * dim), `pad row ${what}`);
  }
});

test('webgpu embedding: empty inputs write nothing', async () => {
  const o = outF(Float32Array.of(7));
  embedding(gpuF(Float32Array.of(1, 2)), gpuI(new Int32Array(0)), o, 2);
  embeddingBackward(gpuF(new Float32Array(0)), gpuI(new Int32Array(0)), o, 1, -1);
  embeddingBackward(gpuF(new Float32Array(0)), gpuI(Int32Array.of(0)), o, 0, -1);
  assert.deepEqual([...(await down(o, 1))], [7]);
});
