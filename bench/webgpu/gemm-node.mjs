#!/usr/bin/env node
// WebGPU in Node (Dawn, from the npm package `webgpu`): which adapter this machine gives, and a tiled fp32
// GEMM's GFLOP/s on it, each output checked against a float64 reference before it is timed. It proves the
// harness for issue 49 (a webgpu backend) wherever a machine with a GPU is lent; on SwiftShader (no GPU)
// the numbers mean nothing but the checks still run.
//
//   node bench/webgpu/gemm-node.mjs [--sizes 256,1024,4096] [--json out.json]
//
// The kernel: C (M, N) = A (M, K) · op(B), op(B) = B (K, N) (NN) or Bᵀ with B stored (N, K) (NT, every Linear).
// A 64×64 tile of C per workgroup of 16×16 threads, 4×4 outputs per thread, K in steps of 16 through
// workgroup memory (2 × 64 × 16 floats = 8 KiB), so each loaded element feeds 4 multiply-adds per thread.
import { createRequire } from 'node:module';
import { writeFileSync } from 'node:fs';

const require = createRequire(`${process.cwd()}/`);
const args = process.argv.slice(2);
const flag = (name, def) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : def;
};
const sizes = flag('--sizes', '256,512,1024,2048,4096').split(',').map(Number);
const jsonOut = flag('--json', null);

let webgpu;
try {
  webgpu = require('webgpu');
} catch {
  console.error('gemm-node: the npm package `webgpu` is not installed here (npm install --no-save webgpu)');
  process.exit(1);
}
Object.assign(globalThis, webgpu.globals);
const gpu = webgpu.create([]);
const adapter = await gpu.requestAdapter({ powerPreference: 'high-performance' });
if (!adapter) {
  console.error('gemm-node: no WebGPU adapter (Vulkan loader and driver visible? VK_ICD_FILENAMES?)');
  process.exit(1);
}
const lim = adapter.limits;
const device = await adapter.requestDevice({
  requiredLimits: {
    maxStorageBufferBindingSize: lim.maxStorageBufferBindingSize,
    maxBufferSize: lim.maxBufferSize,
  },
});
const info = adapter.info;
console.log(
  `adapter: ${info.vendor} ${info.architecture} ${info.device} ${info.description} (${info.backendType ?? ''})`,
);
console.log(`features: ${[...adapter.features].sort().join(', ') || 'none'}`);
console.log(
  `limits: maxBufferSize ${lim.maxBufferSize}, maxStorageBufferBindingSize ${lim.maxStorageBufferBindingSize}, ` +
    `maxComputeWorkgroupStorageSize ${lim.maxComputeWorkgroupStorageSize}`,
);

const shader = /* wgsl */ `
override TRANS_B: bool = false;
struct Dims { m: u32, n: u32, k: u32, pad: u32 }
@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;
@group(0) @binding(3) var<uniform> d: Dims;
var<workgroup> ta: array<array<f32, 64>, 16>; // [kk][row]
var<workgroup> tb: array<array<f32, 64>, 16>; // [kk][col]

fn loadB(kk: u32, col: u32) -> f32 {
  if (kk >= d.k || col >= d.n) { return 0.0; }
  if (TRANS_B) { return b[col * d.k + kk]; }
  return b[kk * d.n + col];
}

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let row0 = wg.y * 64u;
  let col0 = wg.x * 64u;
  let t = lid.y * 16u + lid.x; // 0..255
  var acc: array<array<f32, 4>, 4>;
  for (var k0 = 0u; k0 < d.k; k0 += 16u) {
    // 1,024 elements of each tile, 4 per thread.
    for (var i = 0u; i < 4u; i++) {
      let e = t + i * 256u;
      let r = e / 16u;
      let kk = e % 16u;
      let gr = row0 + r;
      let gk = k0 + kk;
      ta[kk][r] = select(0.0, a[gr * d.k + gk], gr < d.m && gk < d.k);
      if (TRANS_B) {
        tb[kk][r] = loadB(gk, col0 + r);
      } else {
        let kb = e / 64u;
        let cb = e % 64u;
        tb[kb][cb] = loadB(k0 + kb, col0 + cb);
      }
    }
    workgroupBarrier();
    for (var kk = 0u; kk < 16u; kk++) {
      var av: array<f32, 4>;
      var bv: array<f32, 4>;
      for (var i = 0u; i < 4u; i++) {
        av[i] = ta[kk][lid.y * 4u + i];
        bv[i] = tb[kk][lid.x * 4u + i];
      }
      for (var i = 0u; i < 4u; i++) {
        for (var j = 0u; j < 4u; j++) { acc[i][j] = fma(av[i], bv[j], acc[i][j]); }
      }
    }
    workgroupBarrier();
  }
  for (var i = 0u; i < 4u; i++) {
    let r = row0 + lid.y * 4u + i;
    if (r >= d.m) { continue; }
    for (var j = 0u; j < 4u; j++) {
      let col = col0 + lid.x * 4u + j;
      if (col < d.n) { c[r * d.n + col] = acc[i][j]; }
    }
  }
}`;
const module = device.createShaderModule({ code: shader });
const info2 = await module.getCompilationInfo();
for (const m of info2.messages) console.log(`wgsl ${m.type}: ${m.message} (line ${m.lineNum})`);
const pipelines = {
  NN: device.createComputePipeline({ layout: 'auto', compute: { module, entryPoint: 'main', constants: {} } }),
  NT: device.createComputePipeline({
    layout: 'auto',
    compute: { module, entryPoint: 'main', constants: { TRANS_B: 1 } },
  }),
};

function rand(n, seed) {
  const x = new Float32Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    x[i] = s / 2 ** 32 - 0.5;
  }
  return x;
}

function buffer(data, usage) {
  const buf = device.createBuffer({ size: Math.max(16, data.byteLength), usage });
  device.queue.writeBuffer(buf, 0, data);
  return buf;
}

const STORAGE = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC;

function setup(layout, m, n, k) {
  const a = rand(m * k, 1);
  const b = rand(k * n, 2);
  const ba = buffer(a, STORAGE);
  const bb = buffer(b, STORAGE);
  const bc = device.createBuffer({ size: m * n * 4, usage: STORAGE });
  const bu = buffer(new Uint32Array([m, n, k, 0]), GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST);
  const pipeline = pipelines[layout];
  const bind = device.createBindGroup({
    layout: pipeline.getBindGroupLayout(0),
    entries: [ba, bb, bc, bu].map((buf, i) => ({ binding: i, resource: { buffer: buf } })),
  });
  const encodeMany = (times) => {
    const enc = device.createCommandEncoder();
    const pass = enc.beginComputePass();
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, bind);
    for (let i = 0; i < times; i++) pass.dispatchWorkgroups(Math.ceil(n / 64), Math.ceil(m / 64));
    pass.end();
    return enc;
  };
  return { a, b, bc, encodeMany, destroy: () => [ba, bb, bc, bu].forEach((x) => x.destroy()) };
}

async function readBack(buf, bytes) {
  const staging = device.createBuffer({ size: bytes, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  const enc = device.createCommandEncoder();
  enc.copyBufferToBuffer(buf, 0, staging, 0, bytes);
  device.queue.submit([enc.finish()]);
  await staging.mapAsync(GPUMapMode.READ);
  const out = new Float32Array(staging.getMappedRange().slice(0));
  staging.unmap();
  staging.destroy();
  return out;
}

/** Max |c − ref| / (|ref| + 1) over a sample of rows (all rows when small), the reference in float64. */
async function check(layout, m, n, k) {
  const s = setup(layout, m, n, k);
  device.queue.submit([s.encodeMany(1).finish()]);
  const c = await readBack(s.bc, m * n * 4);
  s.destroy();
  const bAt = layout === 'NN' ? (kk, j) => s.b[kk * n + j] : (kk, j) => s.b[j * k + kk];
  const rows = m <= 300 ? [...Array(m).keys()] : [0, 1, 63, 64, 65, m >> 1, m - 2, m - 1];
  let worst = 0;
  for (const i of rows) {
    for (let j = 0; j < n; j++) {
      let ref = 0;
      for (let kk = 0; kk < k; kk++) ref += s.a[i * k + kk] * bAt(kk, j);
      worst = Math.max(worst, Math.abs(c[i * n + j] - ref) / (Math.abs(ref) + 1));
    }
  }
  return worst;
}

const results = [];
// Awkward shapes first (edges of every tile), then each timed size, all checked before timing.
for (const layout of ['NN', 'NT']) {
  for (const [m, n, k] of [
    [129, 67, 93],
    [1, 768, 768],
    [64, 64, 16],
  ]) {
    const err = await check(layout, m, n, k);
    const ok = err < 1e-5;
    console.log(`check ${layout} ${m}x${n}x${k}: max rel err ${err.toExponential(2)} ${ok ? 'ok' : 'WRONG'}`);
    if (!ok) process.exit(1);
  }
}
for (const size of sizes) {
  for (const layout of ['NN', 'NT']) {
    const err = await check(layout, size, size, size);
    if (!(err < 1e-4)) {
      console.log(`check ${layout} ${size}³: max rel err ${err} WRONG`);
      process.exit(1);
    }
    const s = setup(layout, size, size, size);
    const flops = 2 * size ** 3;
    // Enough dispatches per submit for ~50 ms of work at 10 TFLOP/s, at least 4.
    const per = Math.max(4, Math.min(200, Math.round(5e11 / flops)));
    device.queue.submit([s.encodeMany(per).finish()]);
    await device.queue.onSubmittedWorkDone();
    const times = [];
    for (let r = 0; r < 7; r++) {
      const t0 = performance.now();
      device.queue.submit([s.encodeMany(per).finish()]);
      await device.queue.onSubmittedWorkDone();
      times.push((performance.now() - t0) / per);
    }
    s.destroy();
    times.sort((x, y) => x - y);
    const med = times[3];
    const gflops = flops / (med * 1e6);
    results.push({ layout, size, ms: med, gflops, checkErr: err });
    console.log(
      `gemm ${layout} ${size}³: median ${med.toFixed(4)} ms per product (${per} per submit, 7 submits), ` +
        `${gflops.toFixed(0)} GFLOP/s, checked (max rel err ${err.toExponential(2)})`,
    );
  }
}
if (jsonOut) {
  const adapterInfo = Object.fromEntries(['vendor', 'architecture', 'device', 'description'].map((k) => [k, info[k]]));
  const body = { adapter: adapterInfo, features: [...adapter.features].sort(), results };
  writeFileSync(jsonOut, `${JSON.stringify(body, null, 2)}\n`);
}
device.destroy();
process.exit(0);
