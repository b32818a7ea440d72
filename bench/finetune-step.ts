/**
 * One qkv row of bench/finetune.ts, in a process of its own so that the process's peak is that row's alone:
 *   npx tsx bench/finetune-step.ts fp32|int8|q4 plain|recompute [--smoke]
 * The model is made as a folder of that dtype loads it (built without initialisation, quantized to the stored
 * layout, every tensor written in pieces with bench/peak-weights.ts's seeded values: the same fp32 weights the
 * parent writes for PyTorch), the base frozen (int8/q4: nn/qlora.ts quantizeForLora, the QLoRA-style base), PEFT's
 * LoRA adapter attached (bench/finetune-shape.ts), then 1 + STEPS steps of the FineTuner (forward, cross-entropy,
 * backward, clipping, AdamW) on the wasm backend with THREADS threads.
 * Prints one JSON line { ms, peak_mib, base_mib, loss0, losses }: the median of the timed steps, the peak resident
 * memory (VmHWM) less the resident memory just before the model, and the first step's loss.
 */
import { setNumThreads } from '../src/backend/wasm/threads.ts';
import { decoderConfigFromHf, llamaLinearSites } from '../src/models/hf/llama.ts';
import { attachLora, loraConfig } from '../src/models/hf/peft.ts';
import { freeze } from '../src/nn/lora.ts';
import { quantizeForLora } from '../src/nn/qlora.ts';
import { manualSeed, models, setBackend, Tensor } from '../src/index.ts';
import { FineTuner } from '../src/train/finetune.ts';
import { StreamData, type FineTuneData } from '../src/train/finetune-data.ts';
import { BATCH, HF_CONFIG, LORA, LR, SEQ, STEPS, stepIds, THREADS } from './finetune-shape.ts';
import { status, writeSeededWeights } from './peak-weights.ts';

const [dtype, mode] = process.argv.slice(2);
if (dtype !== 'fp32' && dtype !== 'int8' && dtype !== 'q4')
  throw new Error(`finetune-step: dtype must be fp32, int8 or q4, got ${dtype}`);
if (mode !== 'plain' && mode !== 'recompute')
  throw new Error(`finetune-step: mode must be plain or recompute, got ${mode}`);

setBackend('wasm');
setNumThreads(THREADS);
const base = status('VmRSS');
const model = new models.GPT(decoderConfigFromHf(HF_CONFIG), { init: false });
if (dtype !== 'fp32') model.quantize({ dtype, tables: 'float32', empty: true });
writeSeededWeights(model); // what loading a folder writes
if (dtype !== 'fp32') quantizeForLora(model, dtype);
else freeze(model);
manualSeed(1); // A's draw
attachLora(
  model,
  llamaLinearSites(model),
  loraConfig({ r: LORA.r, loraAlpha: LORA.alpha, targetModules: LORA.targets }),
);
model.recompute = mode === 'recompute';
const trainer = new FineTuner(model, new StreamData(new Int32Array(SEQ + 2), 1, SEQ) as FineTuneData<unknown>, {
  lr: LR,
  schedule: 'constant',
});
const ids = stepIds();
const batch = {
  x: new Tensor(Int32Array.from(ids.flatMap((r) => r.slice(0, -1))), [BATCH, SEQ], 'int32'),
  y: new Tensor(Int32Array.from(ids.flatMap((r) => r.slice(1))), [BATCH, SEQ], 'int32'),
};
const losses: number[] = [];
const times: number[] = [];
for (let i = 0; i <= STEPS; i++) {
  const t0 = performance.now();
  losses.push(trainer.stepOn(batch).loss);
  if (i > 0) times.push(performance.now() - t0);
}
const ms = [...times].sort((a, b) => a - b)[times.length >> 1]!;
if (!losses.every(Number.isFinite)) throw new Error(`finetune-step: a loss is not finite: ${losses.join(', ')}`);
console.log(JSON.stringify({ ms, peak_mib: status('VmHWM') - base, base_mib: base, loss0: losses[0], losses }));
