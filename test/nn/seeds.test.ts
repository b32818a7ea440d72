/** The seeds' worked examples, reproduced to the digits the tutorials print. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { F, nn, tensor } from '../../src/index.ts';
import { assertClose } from '../helpers/assert.ts';

/** Printed to 4 decimals: allow half a unit in the last place. */
const close4 = (a: Parameters<typeof assertClose>[0], b: number[] | number[][], what: string) =>
  assertClose(a, b.flat(), what, 5.01e-5, 0);

test('seed 003: Q = K = I2, V = [[2,3],[4,5]] -> weights [[0.67,0.33],[0.33,0.67]], output [[2.66,3.66],[3.34,4.34]]', () => {
  const I = tensor([
    [1, 0],
    [0, 1],
  ]);
  const V = tensor([
    [2, 3],
    [4, 5],
  ]);
  const { output, weights } = F.attention(I, I, V, { needWeights: true });
  const round2 = (t: number[]) => t.map((x) => Math.round(x * 100) / 100);
  assert.deepEqual(round2(weights!.toArray()), [0.67, 0.33, 0.33, 0.67]);
  assert.deepEqual(round2(output.toArray()), [2.66, 3.66, 3.34, 4.34]);
  // Step 2 of the seed: scores scaled by √2 -> 0.707.
  // biome-ignore lint/suspicious/noApproximativeNumericConstant: the seed prints 0.707.
  assert.equal(Math.round((1 / Math.sqrt(2)) * 1000) / 1000, 0.707);
  // The fused path (no weights) gives the same numbers.
  assert.deepEqual(round2(F.scaledDotProductAttention(I, I, V).toArray()), [2.66, 3.66, 3.34, 4.34]);
});

// Seed 002: "Your journey starts with one step", 3-d embeddings.
const inputs = tensor([
  [0.43, 0.15, 0.89], // Your
  [0.55, 0.87, 0.66], // journey
  [0.57, 0.85, 0.64], // starts
  [0.22, 0.58, 0.33], // with
  [0.77, 0.25, 0.1], // one
  [0.05, 0.8, 0.55], // step
]);

test('seed 002: unscaled dot-product scores', () => {
  const { scores } = new nn.SimpleSelfAttention().forward(inputs);
  close4(
    scores,
    [
      [0.9995, 0.9544, 0.9422, 0.4753, 0.4576, 0.631],
      // biome-ignore lint/suspicious/noApproximativeNumericConstant: the seed's printed score.
      [0.9544, 1.495, 1.4754, 0.8434, 0.707, 1.0865],
      [0.9422, 1.4754, 1.457, 0.8296, 0.7154, 1.0605],
      [0.4753, 0.8434, 0.8296, 0.4937, 0.3474, 0.6565],
      // biome-ignore lint/suspicious/noApproximativeNumericConstant: the seed's printed score.
      [0.4576, 0.707, 0.7154, 0.3474, 0.6654, 0.2935],
      [0.631, 1.0865, 1.0605, 0.6565, 0.2935, 0.945],
    ],
    'scores',
  );
});

test('seed 002: softmax weights, naive normalisation, and context vectors', () => {
  const { weights, output } = new nn.SimpleSelfAttention().forward(inputs);
  close4(
    weights,
    [
      [0.2098, 0.2006, 0.1981, 0.1242, 0.122, 0.1452],
      [0.1385, 0.2379, 0.2333, 0.124, 0.1082, 0.1581],
      [0.139, 0.2369, 0.2326, 0.1242, 0.1108, 0.1565],
      [0.1435, 0.2074, 0.2046, 0.1462, 0.1263, 0.172],
      [0.1526, 0.1958, 0.1975, 0.1367, 0.1879, 0.1295],
      [0.1385, 0.2184, 0.2128, 0.142, 0.0988, 0.1896],
    ],
    'weights',
  );
  close4(
    output,
    [
      [0.4421, 0.5931, 0.579],
      [0.4419, 0.6515, 0.5683],
      [0.4431, 0.6496, 0.5671],
      [0.4304, 0.6298, 0.551],
      [0.4671, 0.591, 0.5266],
      [0.4177, 0.6503, 0.5645],
    ],
    'context vectors',
  );
  // The seed's first, naive normalisation: scores / sum.
  const s2 = new nn.SimpleSelfAttention().forward(inputs).scores.narrow(0, 1, 1);
  close4(F.div(s2, F.sum(s2)), [[0.1455, 0.2278, 0.2249, 0.1285, 0.1077, 0.1656]], 'naive weights');
  close4(F.sum(F.narrow(weights, 0, 2, 1)), [1.0], 'row sum');
});

test('seed 004: a transformer block (dModel 64, 8 heads, dFf 256) has 49,984 parameters', () => {
  // MHA 4·64·64 + 4·64 = 16,640; FFN 64·256 + 256 + 256·64 + 64 = 33,088; two LayerNorms 256.
  const block = new nn.TransformerEncoderLayer({ dModel: 64, nhead: 8, dimFeedforward: 256, batchFirst: true });
  assert.equal(block.numParameters(), 49984);
});

test('seed 004: positional encoding formula PE(pos,2i)=sin(pos/10000^(2i/d)), PE(pos,2i+1)=cos(...)', () => {
  const pe = nn.sinusoidalTable(50, 16);
  const at = (pos: number, j: number) => pe.dataSync()[pos * 16 + j];
  assert.equal(at(0, 0), 0);
  assert.equal(at(0, 1), 1);
  assertClose([at(1, 0), at(1, 1)], [Math.sin(1), Math.cos(1)], 'pos 1, i 0');
  assertClose([at(7, 4), at(7, 5)], [Math.sin(7 / 10000 ** (4 / 16)), Math.cos(7 / 10000 ** (4 / 16))], 'pos 7, i 2');
  // The module adds it to (B, T, d) inputs; dropout is off in eval mode.
  const m = new nn.PositionalEncoding(16, { dropout: 0.1, maxLen: 50 }).eval();
  const out = m.forward(tensor(new Float32Array(2 * 3 * 16), [2, 3, 16]));
  assertClose(out.narrow(0, 1, 1).reshape(3, 16), pe.narrow(0, 0, 3), 'encoding added');
});

test('seed 000: causal attention — changing a later token leaves earlier outputs unchanged', () => {
  const mha = new nn.MultiheadAttention(8, 2, { batchFirst: true });
  const x = tensor(
    Array.from({ length: 3 * 8 }, (_, i) => Math.cos(i * 0.7)),
    [1, 3, 8],
  );
  const y = x.clone();
  for (let j = 0; j < 8; j++) y.dataSync()[2 * 8 + j] += 1; // change token 3 only
  const a = mha.forward(x, x, x, { isCausal: true }).output;
  const b = mha.forward(y, y, y, { isCausal: true }).output;
  assertClose(a.narrow(1, 0, 2), b.narrow(1, 0, 2), 'first two positions', 1e-6, 0);
  assert.notDeepEqual(a.narrow(1, 2, 1).toArray(), b.narrow(1, 2, 1).toArray());
  // The same with an explicit boolean mask (torch.nn: TRUE = blocked) and the averaged weights.
  const mask = tensor([
    [false, true, true],
    [false, false, true],
    [false, false, false],
  ]);
  const c = mha.forward(x, x, x, { attnMask: mask });
  assertClose(c.output, a, 'bool causal mask == isCausal');
  const w = c.weights!.toArray();
  assert.deepEqual([w[1], w[2], w[5]], [0, 0, 0]);
});

test('seed 000: cross attention — decoder queries attend over encoder keys (L != S)', () => {
  const mha = new nn.MultiheadAttention(8, 2, { batchFirst: true });
  const dec = tensor(
    Array.from({ length: 2 * 8 }, (_, i) => Math.sin(i)),
    [1, 2, 8],
  );
  const enc = tensor(
    Array.from({ length: 5 * 8 }, (_, i) => Math.cos(i)),
    [1, 5, 8],
  );
  const { output, weights } = mha.forward(dec, enc, enc, { averageAttnWeights: false });
  assert.deepEqual(output.shape, [1, 2, 8]);
  assert.deepEqual(weights!.shape, [1, 2, 2, 5]);
  const w = weights!.toArray();
  for (let row = 0; row < 4; row++)
    assertClose([w.slice(row * 5, row * 5 + 5).reduce((s, v) => s + v, 0)], [1], 'row sums');
});
