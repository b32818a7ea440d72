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
import { status, writeSeededWeights } from './peak-weights.ts';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { setNumThreads } from '../src/backend/wasm/threads.ts';
import { SESSION_OPTIONS } from '../src/cli/onnxruntime.ts';
import { generateStreamAsync } from '../src/decode/gpt.ts';
import { OrtGpt } from '../src/decode/onnxruntime.ts';
import { decoderConfigFromHf } from '../src/models/hf/llama.ts';
import { decode, models, setBackend } from '../src/index.ts';
import { HF_CONFIG, NEW, PROMPT, THREADS } from './decoders-shape.ts';

const [engine, arg] = process.argv.slice(2);

if (engine === 'qkv') {
  if (arg !== 'fp32' && arg !== 'int8' && arg !== 'q4')
    throw new Error(`decoders-peak: qkv takes fp32, int8 or q4, got ${arg}`);
  setBackend('wasm');
  setNumThreads(THREADS);
  const base = status('VmRSS');
  const m = new models.GPT(decoderConfigFromHf(HF_CONFIG), { init: false }).eval();
  if (arg !== 'fp32') m.quantize({ dtype: arg, empty: true });
  writeSeededWeights(m); // what loading a folder writes
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
