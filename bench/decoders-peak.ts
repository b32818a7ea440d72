/**
 * Peak memory of the SmolLM2-135M-shaped greedy decoding of bench/decoders.ts, one engine and dtype per process, so
 * the process's peak is that model's alone (as bench/gpt2-peak.ts does for GPT-2's shape).
 *   npx tsx bench/decoders-peak.ts qkv fp32|int8|q4 [--smoke]   qkv (wasm, 2 threads): the model as a folder of that
 *       dtype loads it (built without initialisation, quantized to the stored layout, then every tensor written in
 *       pieces with seeded values of its stored dtype), then 64 greedy tokens with the KV cache
 *   npx tsx bench/decoders-peak.ts ort DIR                       ONNX Runtime (onnxruntime-node, 2 intra-op
 *       threads): a session on DIR's graph (DIR/manifest.json, written by bench/decoders.ts from qkv's export),
 *       then the same decoding through OrtGpt
 * Prints one JSON line { peak_mib, base_mib }: the peak resident memory (VmHWM, Linux /proc) minus the resident
 * memory just before the model is made (after the imports and the backend's start).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { setNumThreads } from '../src/backend/wasm/threads.ts';
import { SESSION_OPTIONS } from '../src/cli/onnxruntime.ts';
import { generateStreamAsync } from '../src/decode/gpt.ts';
import { OrtGpt } from '../src/decode/onnxruntime.ts';
import { decoderConfigFromHf } from '../src/models/hf/llama.ts';
import { decode, models, noGrad, setBackend } from '../src/index.ts';
import { storageLength } from '../src/tensor/storage.ts';
import { HF_CONFIG, NEW, PROMPT, THREADS } from './decoders-shape.ts';

const [engine, arg] = process.argv.slice(2);
const status = (key: string) =>
  Number(new RegExp(`${key}:\\s+(\\d+)`).exec(readFileSync('/proc/self/status', 'utf8'))![1]) / 1024;

if (engine === 'qkv') {
  if (arg !== 'fp32' && arg !== 'int8' && arg !== 'q4')
    throw new Error(`decoders-peak: qkv takes fp32, int8 or q4, got ${arg}`);
  setBackend('wasm');
  setNumThreads(THREADS);
  const base = status('VmRSS');
  const m = new models.GPT(decoderConfigFromHf(HF_CONFIG), { init: false }).eval();
  if (arg !== 'fp32') m.quantize({ dtype: arg, empty: true });
  let seed = 1;
  const next = () => {
    seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
    return seed / 2 ** 32;
  };
  // In pieces of 2^18 values, as a file is read: no whole-tensor array on the JS heap to count in the peak.
  const PIECE = 1 << 18;
  const f32 = new Float32Array(PIECE);
  const i8 = new Int8Array(PIECE);
  const u8 = new Uint8Array(PIECE);
  const f16 = new Uint16Array(PIECE).fill(0x1c00); // 2^-8 as IEEE half: a q4 block's scale
  noGrad(() => {
    for (const [name, t] of Object.entries(m.stateDict())) {
      const n = storageLength(t.dtype, t.size);
      const scale = name.endsWith('_scale');
      const norm = /(ln_\w*|ln_f)\.weight$/.test(name);
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
  const ids = decode.generate(m, PROMPT, { maxTokens: NEW, temperature: 0, useCache: true }).ids;
  if (ids.length !== NEW) throw new Error(`decoders-peak: expected ${NEW} tokens, got ${ids.length}`);
  console.log(JSON.stringify({ peak_mib: status('VmHWM') - base, base_mib: base }));
} else if (engine === 'ort') {
  if (!arg) throw new Error('decoders-peak: ort takes the folder of the exported graph');
  const base = status('VmRSS');
  const manifest = JSON.parse(readFileSync(join(arg, 'manifest.json'), 'utf8'));
  const session = await ort.InferenceSession.create(join(arg, manifest.graphs.decoder), {
    ...SESSION_OPTIONS,
    intraOpNumThreads: THREADS,
  });
  const lm = new OrtGpt(ort, session, manifest);
  for await (const _ of generateStreamAsync(lm, PROMPT, { maxTokens: NEW, temperature: 0 }));
  console.log(JSON.stringify({ peak_mib: status('VmHWM') - base, base_mib: base }));
  await session.release();
} else throw new Error(`usage: npx tsx bench/decoders-peak.ts qkv fp32|int8|q4 [--smoke] | ort DIR (got ${engine})`);
