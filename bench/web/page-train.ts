/**
 * A Seq2Seq training step on the benchmark page, the workload of `npm run bench`'s training rows
 * (bench/train-step.ts): `models.Seq2Seq` of the shipped EN→DE recipe's shape on B sentence pairs of T tokens
 * (some padded), cross-entropy with label smoothing 0.1, AdamW (weight decay 1e-4), the loss read back each
 * step as qkv's trainers read it (`await loss.itemAsync()`); each step inside a memoryScope. qkv on webgpu
 * against qkv on wasm in the same page (TensorFlow.js and ONNX Runtime Web have no Transformer to train).
 * Check before timing: two steps from the same seed on both backends, losses within 1e-6 + 1e-4·|ref| and
 * every parameter after them within 2e-5 (the bounds of test/webgpu/model.test.ts: float32 tree reductions
 * against the CPU's sums), except the key part of each in_proj_bias (rows E..2E): its exact gradient is zero
 * (the softmax ignores a shift shared by a row's scores), so both backends' gradients there are rounding noise
 * and Adam turns noise of either sign into steps of up to lr on each side: there within 2·2·lr·1.01
 * (test/e2e/webgpu-page.once.test.ts says more).
 */
import { F, manualSeed, memoryScope, models, optim, setBackend, tensor } from '../../src/index.ts';
import { batchIds, type TrainShape } from '../train-step.ts';
import {
  type Check,
  checkAtolRtol,
  checkClose,
  log,
  type Part,
  type Row,
  type TimeOptions,
  timeCall,
} from './page-common.ts';

const LR = 1e-4;

export interface TrainWork {
  /** The row's name. */
  name: string;
  shape: TrainShape;
  B: number;
  T: number;
}

async function trainer(backend: string, w: TrainWork) {
  await setBackend(backend);
  manualSeed(1);
  const { weightDecay, ...cfg } = w.shape;
  const model = new models.Seq2Seq(cfg);
  const opt = new (weightDecay > 0 ? optim.AdamW : optim.Adam)(model.parameters(), {
    lr: LR,
    betas: [0.9, 0.98],
    eps: 1e-9,
    weightDecay,
  });
  const ids = tensor(new Int32Array(batchIds(cfg.vocabSize, w.B, w.T)), [w.B, w.T]);
  let last = 0;
  const step = async () => {
    const loss = memoryScope(() => {
      const l = F.crossEntropy(model.forward(ids, ids), ids, { ignoreIndex: 0, labelSmoothing: 0.1 });
      opt.zeroGrad();
      l.backward();
      opt.step();
      return l.detach();
    });
    last = await loss.itemAsync();
    return last;
  };
  return { model, step, loss: () => last };
}

export async function trainWorkload(works: TrainWork[], time: TimeOptions): Promise<Part> {
  const rows: Row[] = [];
  const checks: Check[] = [];
  for (const w of works) {
    const gpu = await trainer('webgpu', w);
    const gpuLosses = [await gpu.step(), await gpu.step()];
    const gpuParams = await Promise.all(gpu.model.parameters().map((p) => p.data() as Promise<Float32Array>));
    const cpu = await trainer('wasm', w);
    const cpuLosses = [await cpu.step(), await cpu.step()];
    const cpuParams = await Promise.all(cpu.model.parameters().map((p) => p.data() as Promise<Float32Array>));
    checks.push(checkAtolRtol(`${w.name}: two losses, webgpu against wasm`, gpuLosses, cpuLosses, 1e-6, 1e-4));
    const names = gpu.model.namedParameters().map(([n]) => n);
    let worst = 0;
    let worstKey = 0;
    gpuParams.forEach((p, i) => {
      const what = `${w.name}: parameter ${names[i]} after two steps`;
      const E = p.length / 3;
      const isKey = (j: number) => names[i]!.endsWith('in_proj_bias') && j >= E && j < 2 * E;
      const bound = (j: number) => (isKey(j) ? 2 * 2 * LR * 1.01 : 2e-5);
      checkClose(what, p, cpuParams[i]!, bound, '2e-5, the key biases 4.04·lr');
      p.forEach((x, j) => {
        const d = Math.abs(x - cpuParams[i]![j]!);
        if (isKey(j)) worstKey = Math.max(worstKey, d);
        else worst = Math.max(worst, d);
      });
    });
    checks.push({
      what: `${w.name}: every parameter after two steps, webgpu against wasm (the key biases apart)`,
      maxDiff: worst,
      bound: '2e-5',
    });
    checks.push({
      what: `${w.name}: the key parts of in_proj_bias (zero gradient) after two steps`,
      maxDiff: worstKey,
      bound: '2·2·lr·1.01',
    });
    await setBackend('webgpu');
    const t = await timeCall(gpu.step, async () => gpu.loss(), time);
    const qkv = t.ms;
    await setBackend('wasm');
    const wasm = (await timeCall(cpu.step, async () => cpu.loss(), time)).ms;
    const row: Row = {
      workload: w.name,
      unit: 'ms',
      qkv,
      tfjs: null,
      ort: null,
      wasm,
      note: 'TensorFlow.js and ONNX Runtime Web have no Transformer to train',
      counts: { qkv: t.counts },
    };
    log(`${w.name}: qkv webgpu ${qkv.toFixed(1)} ms, qkv wasm ${wasm.toFixed(1)} ms`);
    rows.push(row);
  }
  return { rows, checks };
}
