import type { HostKernels } from '../backend.ts';
import { jsKernels } from './registry.ts';

/**
 * Rotary position embedding (RoPE, Su et al. 2021 §3.4) in transformers' rotate_half layout: each head's D
 * features are D/2 pairs (i, i + D/2), pair i of position t turned by the angle θ_i·t whose cos and sin are
 * the tables' row t. x is (outer, T, heads, D), the tables (T, D/2); out may be x itself (in place).
 * `inverse` turns by −θ: the backward pass (a rotation's transpose is its inverse).
 */
export const rotary: HostKernels['rotary'] = (x, cos, sin, out, outer, positions, heads, dim, inverse) => {
  const half = dim >> 1;
  const sign = inverse ? -1 : 1;
  for (let o = 0; o < outer; o++) {
    for (let t = 0; t < positions; t++) {
      const tab = t * half;
      for (let h = 0; h < heads; h++) {
        const base = ((o * positions + t) * heads + h) * dim;
        for (let i = 0; i < half; i++) {
          const c = cos[tab + i];
          const s = sign * sin[tab + i];
          const a = x[base + i];
          const b = x[base + half + i];
          // Each product rounded to float32 first, as torch's q·cos + rotate_half(q)·sin in float32.
          out[base + i] = Math.fround(a * c) - Math.fround(b * s);
          out[base + half + i] = Math.fround(b * c) + Math.fround(a * s);
        }
      }
    }
  }
};

jsKernels.register('rotary', { rotary });
