/**
 * The page test/e2e/webgpu-page.once.test.ts drives (check.html): qkv in a browser page on its webgpu backend
 * and on its wasm backend, the same work on each, the values handed back to the test, which compares them.
 *   - train(): a small Seq2Seq (seed 11, dropout 0.1) trained three Adam steps (lr 0.01) on a fixed batch,
 *     as test/webgpu/model.test.ts does in Node: the losses, the first step's gradients and the parameters after.
 *   - translate(lines): the shipped EN→DE folder, served at ./models/multi30k-en-de/, opened through the
 *     library's urlSource with pipeline('translation', ..., { device }), its own decoding (beam 4, α 0.6, its
 *     ensemble member).
 * The page loads the wasm kernels and the webgpu backend, then sets `data-ready` on <body>.
 */
import {
  backendInfo,
  F,
  folder,
  getBackend,
  loadWasmKernels,
  manualSeed,
  models,
  optim,
  pipeline,
  setBackend,
  tensor,
} from '../../src/index.ts';

const SMALL = {
  ...models.MULTI30K_SMALL,
  vocabSize: 14,
  dModel: 16,
  nhead: 2,
  numEncoderLayers: 1,
  numDecoderLayers: 1,
  dimFeedforward: 32,
  dropout: 0.1,
  maxLen: 16,
};

export interface TrainOutcome {
  backend: string;
  device: string;
  /** The parameters' names, in the order of grads and params. */
  names: string[];
  losses: number[];
  grads: number[][];
  params: number[][];
}

async function train(backend: string): Promise<TrainOutcome> {
  await setBackend(backend);
  manualSeed(11);
  const m = new models.Seq2Seq(SMALL);
  const opt = new optim.Adam(m.parameters(), { lr: 0.01 });
  const src = tensor(new Int32Array([4, 5, 6, 7, 0, 8, 9, 10, 11, 12]), [2, 5]);
  const tin = tensor(new Int32Array([2, 4, 5, 6, 2, 8, 9, 0]), [2, 4]);
  const tout = tensor(new Int32Array([4, 5, 6, 3, 8, 9, 3, 0]), [2, 4]);
  const losses: number[] = [];
  let grads: number[][] = [];
  for (let step = 0; step < 3; step++) {
    opt.zeroGrad();
    const loss = F.crossEntropy(m.forward(src, tin), tout, { ignoreIndex: 0, labelSmoothing: 0.1 });
    loss.backward();
    if (step === 0) grads = await Promise.all(m.parameters().map(async (p) => Array.from(await p.grad!.data())));
    opt.step();
    losses.push(await loss.itemAsync());
  }
  const params = await Promise.all(m.parameters().map(async (p) => Array.from(await p.data())));
  const names = m.namedParameters().map(([n]) => n);
  return { backend: getBackend().name, device: m.parameters()[0]!.deviceName, names, losses, grads, params };
}

async function translate(backend: 'webgpu' | 'wasm', lines: string[]): Promise<string[]> {
  const source = folder.urlSource(new URL('./models/multi30k-en-de/', location.href));
  const tr = await pipeline('translation', source, { device: backend });
  if (getBackend().name !== backend) throw new Error(`the pipeline runs on ${getBackend().name}, not ${backend}`);
  return tr(lines, { beam: 4 });
}

async function start(): Promise<string> {
  if (!(await loadWasmKernels())) throw new Error(`qkv's wasm backend did not load: ${backendInfo().reason}`);
  await setBackend('webgpu');
  const line = backendInfo().reason;
  (window as unknown as { qkvCheck: unknown }).qkvCheck = { train, translate };
  return line;
}

start().then(
  (line) => {
    console.log(`[check] webgpu: ${line}`);
    document.body.setAttribute('data-ready', 'ok');
  },
  (e: unknown) => {
    document.body.setAttribute('data-error', (e as Error).message ?? String(e));
    document.body.setAttribute('data-ready', 'error');
  },
);
