import type { HostKernels } from '../backend.ts';
import { jsKernels } from './registry.ts';

/**
 * Reference GEMM: C = op(A)·op(B), row-major, batched with strides. The loop order of each
 * transpose case keeps the innermost loop on contiguous memory (the classic i-k-j trick), which is
 * all the speed plain JavaScript can get; the wasm backend has the packed, register-blocked kernel.
 */
export const gemm: HostKernels['gemm'] = (a0, b0, c0, p) => {
  const a = p.offsetA ? a0.subarray(p.offsetA) : a0;
  const b = p.offsetB ? b0.subarray(p.offsetB) : b0;
  const c = p.offsetC ? c0.subarray(p.offsetC) : c0;
  const { batch, m, n, k, transA, transB, strideA, strideB, strideC, accumulate } = p;
  for (let bi = 0; bi < batch; bi++) {
    const ao = bi * strideA;
    const bo = bi * strideB;
    const co = bi * strideC;
    if (!accumulate) c.fill(0, co, co + m * n);
    if (!transA && !transB) {
      // A (m,k), B (k,n): for each row of C, add rows of B scaled by A's entries.
      for (let i = 0; i < m; i++) {
        const ci = co + i * n;
        const ai = ao + i * k;
        for (let kk = 0; kk < k; kk++) {
          const av = a[ai + kk];
          if (av === 0) continue;
          const bk = bo + kk * n;
          for (let j = 0; j < n; j++) c[ci + j] += av * b[bk + j];
        }
      }
    } else if (!transA && transB) {
      // A (m,k), B stored (n,k): dot products of contiguous rows.
      for (let i = 0; i < m; i++) {
        const ai = ao + i * k;
        const ci = co + i * n;
        for (let j = 0; j < n; j++) {
          const bj = bo + j * k;
          let s = 0;
          for (let kk = 0; kk < k; kk++) s += a[ai + kk] * b[bj + kk];
          c[ci + j] += s;
        }
      }
    } else if (transA && !transB) {
      // A stored (k,m), B (k,n): rank-1 updates, one per kk.
      for (let kk = 0; kk < k; kk++) {
        const ak = ao + kk * m;
        const bk = bo + kk * n;
        for (let i = 0; i < m; i++) {
          const av = a[ak + i];
          if (av === 0) continue;
          const ci = co + i * n;
          for (let j = 0; j < n; j++) c[ci + j] += av * b[bk + j];
        }
      }
    } else {
      // A stored (k,m), B stored (n,k).
      for (let i = 0; i < m; i++) {
        const ci = co + i * n;
        for (let j = 0; j < n; j++) {
          const bj = bo + j * k;
          let s = 0;
          for (let kk = 0; kk < k; kk++) s += a[ao + kk * m + i] * b[bj + kk];
          c[ci + j] += s;
        }
      }
    }
  }
};

jsKernels.register('gemm', { gemm });
