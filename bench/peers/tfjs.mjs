// TensorFlow.js side of `npm run bench` (bench/index.ts runs it in a child process; not for
// direct use). Backend: @tensorflow/tfjs-backend-wasm as it ships (SIMD, one thread under Node).
// Reads the workload list as JSON from argv[2]; prints {name: {ms, peak_mb?}} as JSON on stdout.
// Note: the functions given to tf.tidy return nothing: tidy scans a returned container for tensors,
// and returning dataSync()'s array made it walk every element (10× slower GEMMs).
import * as tf from '@tensorflow/tfjs';
import '@tensorflow/tfjs-backend-wasm';

await tf.setBackend('wasm');
await tf.ready();
const work = JSON.parse(process.argv[2]);

function timed(fn, { samples = 5, minMs = 20, capMs = 3000 } = {}) {
  let t0 = performance.now();
  fn();
  const first = performance.now() - t0;
  if (first > capMs) return first;
  const reps = Math.max(1, Math.ceil(minMs / Math.max(first, 0.01)));
  fn();
  const ts = [];
  for (let s = 0; s < samples; s++) {
    t0 = performance.now();
    for (let r = 0; r < reps; r++) fn();
    ts.push((performance.now() - t0) / reps);
  }
  ts.sort((a, b) => a - b);
  return ts[ts.length >> 1];
}

const maxRssMb = () => process.resourceUsage().maxRSS / 1024;

function mhaModel(E, H) {
  const s = 1 / Math.sqrt(E);
  return {
    win: tf.variable(tf.randomUniform([E, 3 * E], -s, s)),
    bin: tf.variable(tf.zeros([3 * E])),
    wo: tf.variable(tf.randomUniform([E, E], -s, s)),
    bo: tf.variable(tf.zeros([E])),
    H,
  };
}

function mha(p, x, win = p.win, bin = p.bin, wo = p.wo, bo = p.bo) {
  const [N, L, E] = x.shape;
  const H = p.H,
    D = E / H;
  const qkv = tf.add(tf.matMul(tf.reshape(x, [N * L, E]), win), bin);
  const [q, k, v] = tf.split(qkv, 3, 1).map((t) => tf.transpose(tf.reshape(t, [N, L, H, D]), [0, 2, 1, 3]));
  const w = tf.softmax(tf.mul(tf.matMul(q, k, false, true), 1 / Math.sqrt(D)));
  const o = tf.reshape(tf.transpose(tf.matMul(w, v), [0, 2, 1, 3]), [N * L, E]);
  return tf.reshape(tf.add(tf.matMul(o, wo), bo), [N, L, E]);
}

const out = {};
for (const w of work) {
  if (w.kind === 'gemm') {
    const a = tf.randomNormal(w.ta ? [w.k, w.m] : [w.m, w.k]);
    const b = tf.randomNormal(w.tb ? [w.n, w.k] : [w.k, w.n]);
    out[w.name] = {
      ms: timed(() =>
        tf.tidy(() => {
          tf.matMul(a, b, w.ta, w.tb).dataSync();
        }),
      ),
    };
    a.dispose();
    b.dispose();
  } else if (w.kind === 'mha_fwd' || w.kind === 'mha_long') {
    const p = mhaModel(w.e, w.h);
    const x = tf.randomNormal([w.b, w.l, w.e]);
    const before = process.memoryUsage().rss / 2 ** 20;
    const ms = timed(
      () =>
        tf.tidy(() => {
          mha(p, x).dataSync();
        }),
      { samples: w.kind === 'mha_long' ? 3 : 5 },
    );
    out[w.name] = { ms, peak_mb: maxRssMb() - before };
  } else if (w.kind === 'mha_fwdbwd') {
    const p = mhaModel(w.e, w.h);
    const x = tf.randomNormal([w.b, w.l, w.e]);
    const r = tf.randomNormal([w.b, w.l, w.e]);
    const g = tf.grads((x, win, bin, wo, bo) => tf.sum(tf.mul(mha(p, x, win, bin, wo, bo), r)));
    out[w.name] = {
      ms: timed(() =>
        tf.tidy(() => {
          for (const t of g([x, p.win, p.bin, p.wo, p.bo])) t.dataSync();
        }),
      ),
    };
  }
}
console.log(JSON.stringify(out));
