/**
 * The last leg of scripts/gpu-check: train.py's fp32 CUDA run (fp32-run.tgz from run.sh, unpacked)
 * continued by qkv on the CPU with `qkv train --resume` from step 5 to 7, against qkv's own 7 steps
 * from the same step-0 run (dropout 0; weights to 1e-4 + 1e-4·|w|, the attention key biases aside).
 *   npx tsx scripts/gpu-check/back.ts FIXTURE_DIR RUN_DIR
 * Exits 1 if they differ.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { readSafetensors } from '../../src/io/safetensors.ts';
import { isKeyBias, makeCorpus, makeRun, qkvCli, readTensors, worstExcess } from '../../test/python/setup.ts';

const [fxDir, runDir] = process.argv.slice(2).map((p) => resolve(p));
const corpus = join(fxDir, 'tiny', 'corpus');
const r = qkvCli([
  'train',
  '--preset',
  'tiny',
  '--out',
  runDir,
  '--data',
  corpus,
  '--resume',
  '--max-steps',
  '7',
  '--save-every',
  '7',
  '--eval-every',
  '100',
  '--bleu-sentences',
  '2',
]);
if (r.status !== 0) throw new Error(`qkv train --resume: ${r.stderr}`);
const resumed = /resumed at step (\d+)/.exec(r.stderr)?.[1];
const meta = JSON.parse(readSafetensors(readFileSync(join(runDir, 'train-state.safetensors'))).metadata.trainer) as {
  position: { step: number };
};
// qkv alone: the fixture's step-0 run rebuilt (same seed, corpus and tokenizer), 7 steps in this process.
const tmp = mkdtempSync(join(tmpdir(), 'qkv-gpu-back-'));
try {
  const fx = makeRun(tmp, makeCorpus(join(tmp, 'corpus')));
  for (let i = 0; i < 7; i++) fx.trainer.step();
  const ours = Object.fromEntries(Object.entries(fx.model.stateDict()).map(([k, v]) => [`model.${k}`, v]));
  const state = readTensors(join(runDir, 'train-state.safetensors'));
  const d = fx.model.config.dModel;
  const { excess, where } = worstExcess(state, ours, 1e-4, 1e-4, (n, i) => isKeyBias(n, i, d));
  const pass = resumed === '5' && meta.position.step === 7 && excess <= 0;
  console.log(
    `${pass ? 'PASS' : 'FAIL'} CUDA run (5 steps) → qkv train --resume (resumed at step ${resumed}, now ${meta.position.step}) = qkv's own 7 steps: worst excess over 1e-4 + 1e-4·|w| ${excess.toExponential(3)} (${where})`,
  );
  process.exitCode = pass ? 0 : 1;
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
