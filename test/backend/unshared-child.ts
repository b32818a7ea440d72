/**
 * Child process of wasm-unshared.once.test.ts: runs a forward and backward pass through the heavy
 * wasm kernels (GEMM, layer norm, gelu, attention, cross-entropy) on seeded inputs, large enough
 * to be split among threads where there are threads, and prints the results' bytes and
 * backendInfo() as JSON. With the argument `unshared` it first makes the process look like a
 * browser page without cross-origin isolation (`crossOriginIsolated = false`), before qkv loads.
 */
if (process.argv.includes('unshared')) (globalThis as { crossOriginIsolated?: boolean }).crossOriginIsolated = false;

const { F, backendInfo, getBackend, manualSeed, randn, tensor } = await import('../../src/index.ts');
const { memoryShared } = await import('../../src/backend/wasm/memory.ts');

manualSeed(11);
const x = randn([256, 512]).requiresGrad_();
const w = randn([512, 256]).requiresGrad_();
const g = randn([256]).requiresGrad_();
const h = F.gelu(F.layerNorm(F.matmul(x, w), [256], g)); // (256, 256): 67 Mflop in the GEMM
const qkv = h.reshape([2, 4, 32, 256]); // (B, H, L, D) = (2, 4, 32, 256)
const a = F.scaledDotProductAttention(qkv, qkv, qkv, { isCausal: true }); // (2, 4, 32, 256)
const logits = F.matmul(a.reshape([256, 256]), w.transpose(0, 1)).reshape([2048, 64]); // 2048 rows
const targets = tensor(
  Int32Array.from({ length: 2048 }, (_, i) => (i * 7) % 64),
  [2048],
);
const loss = F.crossEntropy(logits, targets, { labelSmoothing: 0.1 });
loss.backward();

const parts = [h, a, logits, loss, x.grad!, w.grad!, g.grad!].map((t) => t.dataSync<Float32Array>());
const bytes = Buffer.concat(parts.map((p) => Buffer.from(p.buffer, p.byteOffset, p.byteLength)));
process.stdout.write(
  JSON.stringify({ backend: getBackend().name, memoryShared, info: backendInfo(), bytes: bytes.toString('base64') }),
);
