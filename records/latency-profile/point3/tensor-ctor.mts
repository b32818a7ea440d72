// Tensor.fromStorage cost, a fresh shape literal and another tensor's (frozen) shape: ROOT=<checkout> npx tsx tensor-ctor.mts
const root = process.env.ROOT!;
const { Tensor } = await import(`${root}/src/tensor/tensor.ts`);
const { defaultDevice } = await import(`${root}/src/tensor/storage.ts`);
const dev = defaultDevice();
const st = new Float32Array(128);
const base = Tensor.fromStorage(dev, st, [1, 1, 128], 'float32');
let sink = 0;
const fresh = (n: number) => { for (let i = 0; i < n; i++) sink += Tensor.fromStorage(dev, st, [1, i & 3, 128], 'float32').size; };
const frozen = (n: number) => { for (let i = 0; i < n; i++) sink += Tensor.fromStorage(dev, st, base.shape, 'float32').size; };
const out: string[] = [root];
for (const [name, f] of [['fresh', fresh], ['frozen', frozen]] as const) {
  f(200000);
  const ts: number[] = [];
  for (let r = 0; r < 7; r++) { const t0 = process.cpuUsage(); f(200000); const d = process.cpuUsage(t0); ts.push((d.user + d.system) / 200); }
  out.push(`${name} ${ts.sort((x, y) => x - y)[3].toFixed(1)} ns`);
}
console.log(out.join('  '), sink > 0);
