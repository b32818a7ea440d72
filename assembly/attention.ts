// Fused attention, forward and backward, for the wasm backend.
// Same contract as the js twin (src/backend/js/attention.ts), with byte
// addresses instead of arrays; optional arrays are passed as address 0. Float32 arithmetic with
// 128-bit SIMD throughout; exp is a vectorised Cephes polynomial (≈1 ulp), so results agree with the
// js twin (which accumulates in float64 in places) to float32 rounding.
import { exp1, fma, rowAxpy, rowDot, rowExpSub, rowMax, rowScale } from './simd';

// ---------------------------------------------------------------------------------------------
// Fused attention (flash-attention style). Keys are processed in blocks of BC: a block of K (and
// of V for the backward pass) is transposed into a (D, BC) panel so that a query's BC scores are
// SIMD dot products over keys; the running max, sum and output of every query row are updated with
// the online softmax, so no more than BC scores per row ever exist.

const BC: i32 = 64;

/** Scratch floats the attention kernels need. */
export function attentionScratchFloats(l: i32, d: i32, dv: i32): i32 {
  return BC * (d + dv) + 2 * BC + 3 * l + 16;
}

/** Transpose rows × d (row-major, rows <= BC) into a d × BC panel, zero-padded. */
function packPanel(src: usize, rows: i32, d: i32, dst: usize): void {
  for (let t = 0; t < d; t++) {
    const dt = dst + <usize>(t * BC) * 4;
    let s = src + <usize>t * 4;
    const ld = <usize>d * 4;
    for (let j = 0; j < rows; j++) {
      store<f32>(dt + <usize>j * 4, load<f32>(s));
      s += ld;
    }
    for (let j = rows; j < BC; j++) store<f32>(dt + <usize>j * 4, 0);
  }
}

/** out[j] = scale·Σ_t x[t]·panel[t][j] for j < 16·groups. */
function panelScores(x: usize, panel: usize, d: i32, groups: i32, out: usize, scale: f32): void {
  const sv = f32x4.splat(scale);
  for (let g = 0; g < groups; g++) {
    let p = panel + <usize>(g * 64);
    let a0 = f32x4.splat(0), a1 = a0, a2 = a0, a3 = a0;
    for (let t = 0; t < d; t++) {
      const xs = v128.load32_splat(x + <usize>t * 4);
      a0 = fma(xs, v128.load(p), a0);
      a1 = fma(xs, v128.load(p, 16), a1);
      a2 = fma(xs, v128.load(p, 32), a2);
      a3 = fma(xs, v128.load(p, 48), a3);
      p += <usize>BC * 4;
    }
    const o = out + <usize>(g * 64);
    v128.store(o, f32x4.mul(a0, sv));
    v128.store(o, f32x4.mul(a1, sv), 16);
    v128.store(o, f32x4.mul(a2, sv), 32);
    v128.store(o, f32x4.mul(a3, sv), 48);
  }
}

/** y[0..n) += Σ_{j<cnt} c[j]·rows[j][0..n), rows of pitch n floats; y kept in registers by 16s. */
function accumRows(y: usize, c: usize, rows: usize, cnt: i32, n: i32): void {
  const ld = <usize>n * 4;
  let t = 0;
  for (; t + 16 <= n; t += 16) {
    const yt = y + <usize>t * 4;
    let a0 = v128.load(yt), a1 = v128.load(yt, 16), a2 = v128.load(yt, 32), a3 = v128.load(yt, 48);
    let r = rows + <usize>t * 4;
    for (let j = 0; j < cnt; j++) {
      const cj = v128.load32_splat(c + <usize>j * 4);
      a0 = fma(cj, v128.load(r), a0);
      a1 = fma(cj, v128.load(r, 16), a1);
      a2 = fma(cj, v128.load(r, 32), a2);
      a3 = fma(cj, v128.load(r, 48), a3);
      r += ld;
    }
    v128.store(yt, a0);
    v128.store(yt, a1, 16);
    v128.store(yt, a2, 32);
    v128.store(yt, a3, 48);
  }
  for (; t + 4 <= n; t += 4) {
    const yt = y + <usize>t * 4;
    let a0 = v128.load(yt);
    let r = rows + <usize>t * 4;
    for (let j = 0; j < cnt; j++) {
      a0 = fma(v128.load32_splat(c + <usize>j * 4), v128.load(r), a0);
      r += ld;
    }
    v128.store(yt, a0);
  }
  for (; t < n; t++) {
    const yt = y + <usize>t * 4;
    let a: f32 = load<f32>(yt);
    let r = rows + <usize>t * 4;
    for (let j = 0; j < cnt; j++) {
      a += load<f32>(c + <usize>j * 4) * load<f32>(r);
      r += ld;
    }
    store<f32>(yt, a);
  }
}

/**
 * Scores of query row `qi` against key block [j0, j0+cnt): s[j] = scale·q·k + bias, and −∞ for
 * j in [cnt, roundup4(cnt)) so 4-wide passes over the row see no stray keys.
 */
// @ts-ignore: decorator
@inline function blockScores(
  qi: usize, panel: usize, d: i32, cnt: i32, s: usize, scale: f32, biasRow: usize, j0: i32,
): void {
  panelScores(qi, panel, d, (cnt + 15) >> 4, s, scale);
  if (biasRow != 0) {
    const br = biasRow + <usize>j0 * 4;
    let j = 0;
    for (; j + 4 <= cnt; j += 4) {
      v128.store(s + <usize>j * 4, f32x4.add(v128.load(s + <usize>j * 4), v128.load(br + <usize>j * 4)));
    }
    for (; j < cnt; j++) store<f32>(s + <usize>j * 4, load<f32>(s + <usize>j * 4) + load<f32>(br + <usize>j * 4));
  }
  const end = (cnt + 3) & ~3;
  for (let j = cnt; j < end; j++) store<f32>(s + <usize>j * 4, -Infinity);
}

export function attention(
  q: usize, k: usize, v: usize, out: usize, lse: usize, weights: usize,
  B: i32, H: i32, HK: i32, L: i32, S: i32, D: i32, DV: i32, scale: f32, causal: i32,
  bias: usize, bsB: i32, bsH: i32, bsL: i32, scratch: usize,
): void {
  attentionRange(
    q, k, v, out, lse, weights, B, H, HK, L, S, D, DV, scale, causal, bias, bsB, bsH, bsL, scratch, 0, B * H,
  );
}

/** The KV head query head bh = b·H + h reads: b·HK + ⌊h / (H / HK)⌋ (grouped-query attention; bh when HK = H). */
// @ts-ignore: decorator
@inline function kvHead(bh: i32, H: i32, HK: i32): i32 {
  return (bh / H) * HK + (bh % H) / (H / HK);
}

/** `attention` for the (batch, head) pairs [bh0, bh1) only: one thread's share. */
export function attentionRange(
  q: usize, k: usize, v: usize, out: usize, lse: usize, weights: usize,
  B: i32, H: i32, HK: i32, L: i32, S: i32, D: i32, DV: i32, scale: f32, causal: i32,
  bias: usize, bsB: i32, bsH: i32, bsL: i32, scratch: usize, bh0: i32, bh1: i32,
): void {
  const panel = scratch;
  const srow = panel + <usize>(BC * (D + DV)) * 4;
  const mrow = srow + <usize>(2 * BC) * 4;
  const lrow = mrow + <usize>L * 4;
  const shift = S - L;
  for (let bh = bh0; bh < bh1; bh++) {
    const bi = bh / H, hi = bh % H, kvh = kvHead(bh, H, HK);
    const qb = q + <usize>bh * <usize>L * <usize>D * 4;
    const kb = k + <usize>kvh * <usize>S * <usize>D * 4;
    const vb = v + <usize>kvh * <usize>S * <usize>DV * 4;
    const ob = out + <usize>bh * <usize>L * <usize>DV * 4;
    const biasB: usize = bias == 0 ? 0 : bias + (<usize>bi * <usize>bsB + <usize>hi * <usize>bsH) * 4;
    memory.fill(ob, 0, <usize>L * <usize>DV * 4);
    for (let i = 0; i < L; i++) {
      store<f32>(mrow + <usize>i * 4, -Infinity);
      store<f32>(lrow + <usize>i * 4, 0);
    }
    for (let j0 = 0; j0 < S; j0 += BC) {
      const bc = min(BC, S - j0);
      const iStart = causal != 0 ? max(0, j0 - shift) : 0;
      if (iStart >= L) break;
      packPanel(kb + <usize>j0 * <usize>D * 4, bc, D, panel);
      for (let i = iStart; i < L; i++) {
        const cnt = causal != 0 ? min(bc, i + shift + 1 - j0) : bc;
        const biasRow: usize = biasB == 0 ? 0 : biasB + <usize>i * <usize>bsL * 4;
        blockScores(qb + <usize>i * <usize>D * 4, panel, D, cnt, srow, scale, biasRow, j0);
        const mOld = load<f32>(mrow + <usize>i * 4);
        const mNew = max(mOld, rowMax(srow, (cnt + 3) & ~3));
        // Every key so far masked (−∞): nothing to add yet; a later block may still have keys.
        if (mNew == -Infinity) continue;
        const corr = exp1(mOld - mNew);
        const sum = rowExpSub(srow, srow, (cnt + 3) & ~3, mNew);
        store<f32>(lrow + <usize>i * 4, load<f32>(lrow + <usize>i * 4) * corr + sum);
        store<f32>(mrow + <usize>i * 4, mNew);
        const oi = ob + <usize>i * <usize>DV * 4;
        if (corr != 1) rowScale(oi, DV, corr);
        accumRows(oi, srow, vb + <usize>j0 * <usize>DV * 4, cnt, DV);
      }
    }
    for (let i = 0; i < L; i++) {
      const l = load<f32>(lrow + <usize>i * 4);
      const oi = ob + <usize>i * <usize>DV * 4;
      const li = lse + (<usize>bh * <usize>L + <usize>i) * 4;
      if (l == 0) {
        if (causal != 0 && i + shift < 0) {
          // Causal with no visible key (S < L): the js twin leaves zeros and lse = −∞.
          memory.fill(oi, 0, <usize>DV * 4);
          store<f32>(li, -Infinity);
        } else {
          // Every visible key masked by the bias: softmax of all −∞ is NaN (as in js and torch).
          for (let t = 0; t < DV; t++) store<f32>(oi + <usize>t * 4, NaN);
          store<f32>(li, NaN);
        }
      } else {
        rowScale(oi, DV, 1 / l);
        store<f32>(li, load<f32>(mrow + <usize>i * 4) + Mathf.log(l));
      }
    }
    if (weights != 0) {
      const wb = weights + <usize>bh * <usize>L * <usize>S * 4;
      for (let j0 = 0; j0 < S; j0 += BC) {
        const bc = min(BC, S - j0);
        packPanel(kb + <usize>j0 * <usize>D * 4, bc, D, panel);
        for (let i = 0; i < L; i++) {
          const wr = wb + (<usize>i * <usize>S + <usize>j0) * 4;
          const cnt = causal != 0 ? max(0, min(bc, i + shift + 1 - j0)) : bc;
          if (cnt > 0) {
            const biasRow: usize = biasB == 0 ? 0 : biasB + <usize>i * <usize>bsL * 4;
            blockScores(qb + <usize>i * <usize>D * 4, panel, D, cnt, srow, scale, biasRow, j0);
            rowExpSub(srow, srow, cnt, load<f32>(lse + (<usize>bh * <usize>L + <usize>i) * 4));
            memory.copy(wr, srow, <usize>cnt * 4);
          }
          if (cnt < bc) memory.fill(wr + <usize>cnt * 4, 0, <usize>(bc - cnt) * 4);
        }
      }
    }
  }
}

export function attentionBackward(
  q: usize, k: usize, v: usize, out: usize, dout: usize, lse: usize, dq: usize, dk: usize, dv: usize,
  B: i32, H: i32, HK: i32, L: i32, S: i32, D: i32, DV: i32, scale: f32, causal: i32,
  bias: usize, bsB: i32, bsH: i32, bsL: i32, scratch: usize,
): void {
  attentionBackwardRange(
    q, k, v, out, dout, lse, dq, dk, dv, B, H, HK, L, S, D, DV, scale, causal, bias, bsB, bsH, bsL, scratch, 0, B * H,
  );
}

/**
 * `attentionBackward` for the (batch, head) pairs [bh0, bh1) only: one thread's share. bh0 and bh1 are
 * multiples of H / HK, so each KV head's dK and dV (the sum over its query heads) belong to one thread.
 */
export function attentionBackwardRange(
  q: usize, k: usize, v: usize, out: usize, dout: usize, lse: usize, dq: usize, dk: usize, dv: usize,
  B: i32, H: i32, HK: i32, L: i32, S: i32, D: i32, DV: i32, scale: f32, causal: i32,
  bias: usize, bsB: i32, bsH: i32, bsL: i32, scratch: usize, bh0: i32, bh1: i32,
): void {
  const kPanel = scratch;
  const vPanel = kPanel + <usize>(BC * D) * 4;
  const prow = vPanel + <usize>(BC * DV) * 4;
  const dsrow = prow + <usize>BC * 4;
  const delta = dsrow + <usize>BC * 4;
  const shift = S - L;
  const nbh = <usize>(bh1 - bh0);
  const group = H / HK;
  const kv0 = <usize>(bh0 / group), nkv = <usize>((bh1 - bh0) / group);
  memory.fill(dq + <usize>bh0 * <usize>L * <usize>D * 4, 0, nbh * <usize>L * <usize>D * 4);
  memory.fill(dk + kv0 * <usize>S * <usize>D * 4, 0, nkv * <usize>S * <usize>D * 4);
  memory.fill(dv + kv0 * <usize>S * <usize>DV * 4, 0, nkv * <usize>S * <usize>DV * 4);
  const sv = f32x4.splat(scale);
  for (let bh = bh0; bh < bh1; bh++) {
    const bi = bh / H, hi = bh % H, kvh = kvHead(bh, H, HK);
    const qb = q + <usize>bh * <usize>L * <usize>D * 4;
    const kb = k + <usize>kvh * <usize>S * <usize>D * 4;
    const vb = v + <usize>kvh * <usize>S * <usize>DV * 4;
    const ob = out + <usize>bh * <usize>L * <usize>DV * 4;
    const dob = dout + <usize>bh * <usize>L * <usize>DV * 4;
    const dqb = dq + <usize>bh * <usize>L * <usize>D * 4;
    const dkb = dk + <usize>kvh * <usize>S * <usize>D * 4;
    const dvb = dv + <usize>kvh * <usize>S * <usize>DV * 4;
    const biasB: usize = bias == 0 ? 0 : bias + (<usize>bi * <usize>bsB + <usize>hi * <usize>bsH) * 4;
    for (let i = 0; i < L; i++) {
      const o = <usize>i * <usize>DV * 4;
      store<f32>(delta + <usize>i * 4, rowDot(dob + o, ob + o, DV));
    }
    for (let j0 = 0; j0 < S; j0 += BC) {
      const bc = min(BC, S - j0);
      const iStart = causal != 0 ? max(0, j0 - shift) : 0;
      if (iStart >= L) break;
      packPanel(kb + <usize>j0 * <usize>D * 4, bc, D, kPanel);
      packPanel(vb + <usize>j0 * <usize>DV * 4, bc, DV, vPanel);
      const kj = kb + <usize>j0 * <usize>D * 4;
      const dkj = dkb + <usize>j0 * <usize>D * 4;
      const dvj = dvb + <usize>j0 * <usize>DV * 4;
      for (let i = iStart; i < L; i++) {
        const cnt = causal != 0 ? min(bc, i + shift + 1 - j0) : bc;
        const cnt4 = (cnt + 3) & ~3;
        const qi = qb + <usize>i * <usize>D * 4;
        const doi = dob + <usize>i * <usize>DV * 4;
        const biasRow: usize = biasB == 0 ? 0 : biasB + <usize>i * <usize>bsL * 4;
        blockScores(qi, kPanel, D, cnt, prow, scale, biasRow, j0);
        rowExpSub(prow, prow, cnt4, load<f32>(lse + (<usize>bh * <usize>L + <usize>i) * 4));
        panelScores(doi, vPanel, DV, (cnt + 15) >> 4, dsrow, 1);
        const dl = f32x4.splat(load<f32>(delta + <usize>i * 4));
        for (let j = 0; j < cnt4; j += 4) {
          const pj = v128.load(prow + <usize>j * 4);
          const dsj = f32x4.mul(f32x4.mul(pj, f32x4.sub(v128.load(dsrow + <usize>j * 4), dl)), sv);
          v128.store(dsrow + <usize>j * 4, dsj);
        }
        // dq_i += Σ_j ds_j·k_j; dk_j += ds_j·q_i; dv_j += p_j·dO_i.
        accumRows(dqb + <usize>i * <usize>D * 4, dsrow, kj, cnt, D);
        for (let j = 0; j < cnt; j++) {
          const ds = load<f32>(dsrow + <usize>j * 4);
          const p = load<f32>(prow + <usize>j * 4);
          if (ds != 0) rowAxpy(dkj + <usize>j * <usize>D * 4, qi, D, ds);
          if (p != 0) rowAxpy(dvj + <usize>j * <usize>DV * 4, doi, DV, p);
        }
      }
    }
  }
}
