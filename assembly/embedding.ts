// Embedding gather and scatter-add for the wasm backend. Same contract as the js twin
// (src/backend/js/embedding.ts), with byte addresses instead of arrays.
import { copyRow } from './simd';

// ---------------------------------------------------------------------------------------------
// Embedding (ids: i32, validated by the op).

/** out[i, :] = weight[ids[i], :]. */
export function embedding(weight: usize, ids: usize, out: usize, n: i32, dim: i32): void {
  const row = <usize>dim * 4;
  for (let i = 0; i < n; i++) {
    const id = load<i32>(ids + <usize>i * 4);
    copyRow(out + <usize>i * row, weight + <usize>id * row, dim);
  }
}

/** dweight[ids[i], :] += dy[i, :], skipping ids equal to paddingIdx (in order of i, as the twin). */
export function embeddingBackward(dy: usize, ids: usize, dweight: usize, n: i32, dim: i32, paddingIdx: i32): void {
  const row = <usize>dim * 4;
  for (let i = 0; i < n; i++) {
    const id = load<i32>(ids + <usize>i * 4);
    if (id == paddingIdx) continue;
    const d = dweight + <usize>id * row, s = dy + <usize>i * row;
    let j = 0;
    for (; j + 4 <= dim; j += 4) {
      const q = <usize>j * 4;
      v128.store(d + q, f32x4.add(v128.load(d + q), v128.load(s + q)));
    }
    for (; j < dim; j++) {
      const q = <usize>j * 4;
      store<f32>(d + q, load<f32>(d + q) + load<f32>(s + q));
    }
  }
}
