/**
 * Peak memory of GPT-2-124M-shape greedy decoding (issue 50, point 4), one engine and dtype per process, so the
 * process's peak is that model's alone. bench/gpt2-quantized.ts runs it for each row of its table.
 *   npx tsx bench/gpt2-peak.ts qkv fp32|int8|q4   qkv (wasm): the model as a folder of that dtype loads it (built
 *                                                 without initialisation, quantized to the stored layout, then
 *                                                 every tensor written with seeded values of its stored dtype),
 *                                                 then bench/gpt2.ts's greedy decoding (64 tokens, KV cache)
 *   npx tsx bench/gpt2-peak.ts ort DIR            ONNX Runtime (onnxruntime-node, 2 intra-op threads): a session
 *                                                 on DIR/decoder_model.onnx (DIR/manifest.json beside it, written
 *                                                 by the parent from qkv's export), then the same decoding
 * Prints one JSON line { peak_mib, base_mib }: the peak resident memory (VmHWM, Linux /proc) minus the resident
 * memory just before the model is made (after the imports and the backend's start).
 */
import { readFileSync } from 'node:fs';
import { status, writeSeededWeights } from './peak-weights.ts';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { SESSION_OPTIONS } from '../src/cli/onnxruntime.ts';
import { generateStreamAsync } from '../src/decode/gpt.ts';
import { OrtGpt } from '../src/decode/onnxruntime.ts';
import { models, setBackend } from '../src/index.ts';
import { cfg, greedy, NEW, prompt } from './gpt2.ts';

const [engine, arg] = process.argv.slice(2);

if (engine === 'qkv') {
  if (arg !== 'fp32' && arg !== 'int8' && arg !== 'q4')
    throw new Error(`gpt2-peak: qkv takes fp32, int8 or q4, got ${arg}`);
  setBackend('wasm');
  const base = status('VmRSS');
  const m = new models.GPT(cfg, { init: false }).eval();
  if (arg !== 'fp32') m.quantize({ dtype: arg });
  writeSeededWeights(m); // what loading a folder writes
  greedy(m, true);
  console.log(JSON.stringify({ peak_mib: status('VmHWM') - base, base_mib: base }));
} else if (engine === 'ort') {
  if (!arg) throw new Error('gpt2-peak: ort takes the folder of the exported graph');
  const base = status('VmRSS');
  const manifest = JSON.parse(readFileSync(join(arg, 'manifest.json'), 'utf8'));
  const session = await ort.InferenceSession.create(join(arg, manifest.graphs.decoder), {
    ...SESSION_OPTIONS,
    intraOpNumThreads: 2,
  });
  const lm = new OrtGpt(ort, session, manifest);
  for await (const _ of generateStreamAsync(lm, prompt, { maxTokens: NEW, temperature: 0 }));
  console.log(JSON.stringify({ peak_mib: status('VmHWM') - base, base_mib: base }));
  await session.release();
} else throw new Error(`usage: npx tsx bench/gpt2-peak.ts qkv fp32|int8|q4 | ort DIR (got ${engine})`);
