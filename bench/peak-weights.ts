/**
 * What the peak-memory benches (gpt2-peak.ts, decoders-peak.ts) share: the process's memory figures, and a model's
 * weights written as loading a folder writes them, every stored tensor in its stored dtype (values seeded, GPT-2-like
 * scales), in pieces, so that no whole-tensor array on the JS heap counts in the peak.
 */
import { readFileSync } from 'node:fs';
import { noGrad } from '../src/index.ts';
import type { Module } from '../src/nn/module.ts';
import { storageLength } from '../src/tensor/storage.ts';

/** A line of /proc/self/status in MiB: 'VmRSS' now, 'VmHWM' the peak. */
export function status(key: 'VmRSS' | 'VmHWM'): number {
  return Number(new RegExp(`${key}:\\s+(\\d+)`).exec(readFileSync('/proc/self/status', 'utf8'))![1]) / 1024;
}

/** Every tensor of `m`'s state dict written with seeded values of its dtype (float32, float16 scales, int8, q4). */
export function writeSeededWeights(m: Module): void {
  let seed = 1;
  const next = () => {
    seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
    return seed / 2 ** 32;
  };
  // In pieces of 2^18 values, as a file is read.
  const PIECE = 1 << 18;
  const f32 = new Float32Array(PIECE);
  const i8 = new Int8Array(PIECE);
  const u8 = new Uint8Array(PIECE);
  const f16 = new Uint16Array(PIECE).fill(0x1c00); // 2^-8 as IEEE half: a q4 block's scale
  noGrad(() => {
    for (const [name, t] of Object.entries(m.stateDict())) {
      const n = storageLength(t.dtype, t.size);
      const scale = name.endsWith('_scale');
      const norm = /ln_\w*\.weight$/.test(name);
      for (let at = 0; at < n; at += PIECE) {
        const k = Math.min(PIECE, n - at);
        if (t.dtype === 'float32') {
          for (let i = 0; i < k; i++) f32[i] = scale ? 0.02 / 127 : norm ? 1 : (next() - 0.5) * 0.04;
          t.write(f32.subarray(0, k), at);
        } else if (t.dtype === 'float16') t.write(f16.subarray(0, k), at);
        else if (t.dtype === 'int8') {
          for (let i = 0; i < k; i++) i8[i] = Math.floor(next() * 255) - 127;
          t.write(i8.subarray(0, k), at);
        } else {
          for (let i = 0; i < k; i++) u8[i] = Math.floor(next() * 256);
          t.write(u8.subarray(0, k), at);
        }
      }
    }
  });
}
