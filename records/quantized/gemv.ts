/**
 * Per-call CPU time of one-row linear layers (GEMV) of GPT-2 124M's shapes, fp32 / int8 / q4, wasm backend:
 *   node --import tsx records/quantized/gemv.ts
 * (gemv.txt: the one run quoted in README.md, on a loaded shared machine.)
 */
import { F, manualSeed, noGrad, randn, setBackend, nn } from '../../src/index.ts';
setBackend('wasm');
manualSeed(1);
for (const [inF, outF] of [[768, 3072], [3072, 768], [768, 50257]]) {
  const lin = new nn.Linear(inF, outF);
  const x = randn(1, inF);
  const res: string[] = [];
  for (const dtype of ['fp32', 'int8', 'q4'] as const) {
    const m = new nn.Linear(inF, outF); m.loadStateDict(lin.stateDict());
    if (dtype !== 'fp32') m.quantize({ dtype });
    const f = () => noGrad(() => m.forward(x));
    for (let i = 0; i < 5; i++) f();
    const n = outF > 10000 ? 20 : 200;
    const c0 = process.cpuUsage(); const t0 = performance.now();
    for (let i = 0; i < n; i++) f();
    const c = process.cpuUsage(c0); const wall = (performance.now() - t0) / n;
    res.push(`${dtype} cpu ${((c.user + c.system) / 1000 / n).toFixed(3)} ms wall ${wall.toFixed(3)} ms`);
  }
  console.log(`${inF}->${outF}:`, res.join(' | '));
}
