/**
 * Greedy decoding with a GPT of GPT-2 small's shape on the benchmark page (bench/gpt2.ts's workload: random
 * seeded weights, an 8-token prompt continued by `newTokens`, the KV cache), tokens per second including the
 * prompt's step, each engine driven by the same generation code (src/decode/gpt.ts, `generateStreamAsync`):
 *   - qkv on webgpu: `gptAsyncLm(model)` (the model's forwardCached, the last row of logits read back);
 *   - ONNX Runtime Web (WebGPU): the model's `qkv export --format onnx` graph (fp32), the key/value cache kept
 *     on the GPU between steps (present.* outputs fed back as past_key_values.*, as transformers.js does), the
 *     logits read back;
 *   - qkv on wasm (`decode.generate`) as the CPU reference. TensorFlow.js has no GPT: no column.
 * The GELU is the erf form on every engine: qkv's ONNX export writes that one (GPT-2's tanh form would make the
 * export differ from the model), and the cost is the same.
 * Check before timing: the same greedy ids from all engines, and the prompt step's logits against wasm's
 * within 1e-4·max|logit| + 1e-5.
 */
import type * as ortTypes from 'onnxruntime-web/webgpu';
import { type AsyncLm, generateStreamAsync, gptAsyncLm } from '../../src/decode/gpt.ts';
import { decode, manualSeed, models, setBackend } from '../../src/index.ts';
import { exportGptOnnx } from '../../src/io/onnx/export.ts';
import {
  type Check,
  checkClose,
  checkSameIds,
  type GpuCounts,
  gpuCounts,
  log,
  type Part,
  perCall,
  type Row,
  type TimeOptions,
} from './page-common.ts';
import { ortSession, type Peers } from './page-peers.ts';

export interface GptWork {
  name: string;
  config: models.GPTConfig;
  prompt: number;
  newTokens: number;
}

/** A GPT export on ONNX Runtime's WebGPU provider with the cache on the GPU, as an AsyncLm. */
class OrtGpuGpt implements AsyncLm {
  private past: ortTypes.Tensor[] = [];

  constructor(
    private readonly o: NonNullable<Peers['ort']>,
    private readonly session: ortTypes.InferenceSession,
    private readonly c: models.GPTConfig,
  ) {}

  get vocabSize(): number {
    return this.c.vocabSize;
  }

  get blockSize(): number {
    return this.c.blockSize;
  }

  async run(fed: number[], fresh: boolean): Promise<Float32Array> {
    const { o, c } = this;
    const dK = c.nEmbd / c.nHead;
    if (fresh || this.past.length === 0) {
      for (const t of this.past) t.dispose();
      this.past = Array.from(
        { length: 2 * c.nLayer },
        () => new o.Tensor('float32', new Float32Array(0), [1, c.nHead, 0, dK]),
      );
    }
    const feeds: Record<string, ortTypes.Tensor> = {
      input_ids: new o.Tensor('int64', BigInt64Array.from(fed.map(BigInt)), [1, fed.length]),
    };
    for (let i = 0; i < c.nLayer; i++) {
      feeds[`past_key_values.${i}.key`] = this.past[2 * i]!;
      feeds[`past_key_values.${i}.value`] = this.past[2 * i + 1]!;
    }
    const out = await this.session.run(feeds);
    for (const t of this.past) t.dispose();
    this.past = [];
    for (let i = 0; i < c.nLayer; i++) this.past.push(out[`present.${i}.key`]!, out[`present.${i}.value`]!);
    const logits = out.logits!.data as Float32Array;
    return logits.slice((fed.length - 1) * c.vocabSize, fed.length * c.vocabSize);
  }

  dispose(): void {
    for (const t of this.past) t.dispose();
    this.past = [];
  }
}

async function generateIds(lm: AsyncLm, prompt: number[], n: number): Promise<{ ids: number[]; first: Float32Array }> {
  const ids: number[] = [];
  let first: Float32Array | null = null;
  for await (const t of generateStreamAsync(lm, prompt, { maxTokens: n, temperature: 0 })) {
    ids.push(t.id);
    first ??= t.logits;
  }
  return { ids, first: first! };
}

/** Median over `runs` generations of tokens per second, and the GPU work per token. */
async function tokensPerSecond(
  gen: () => Promise<unknown>,
  n: number,
  runs: number,
): Promise<{ tps: number; counts: GpuCounts }> {
  await gen(); // warm-up: shaders, pipelines, pools
  const c0 = gpuCounts();
  const ts: number[] = [];
  for (let r = 0; r < runs; r++) {
    const t0 = performance.now();
    await gen();
    ts.push(performance.now() - t0);
  }
  ts.sort((a, b) => a - b);
  return { tps: (1000 * n) / ts[ts.length >> 1]!, counts: perCall(c0, gpuCounts(), runs * n) };
}

export async function gptWorkload(works: GptWork[], peers: Peers, time: TimeOptions): Promise<Part> {
  const rows: Row[] = [];
  const checks: Check[] = [];
  const runs = Math.max(1, Math.min(3, time.samples));
  for (const w of works) {
    const prompt = Array.from({ length: w.prompt }, (_, i) => (i * 7919 + 13) % w.config.vocabSize);
    await setBackend('wasm');
    manualSeed(1);
    const model = new models.GPT(w.config).eval();
    let graph: Uint8Array | null = peers.ort
      ? exportGptOnnx(model.config, model.stateDict(), { dtype: 'fp32', withAttention: false }).files[
          'decoder_model.onnx'
        ]!
      : null;
    // qkv wasm: the reference ids and logits, then its speed.
    const ref = decode.generate(model, prompt, { maxTokens: w.newTokens, temperature: 0 });
    const wasm = (
      await tokensPerSecond(
        async () => decode.generate(model, prompt, { maxTokens: w.newTokens, temperature: 0 }),
        w.newTokens,
        runs,
      )
    ).tps;
    const bound = 1e-4 * ref.logits[0]!.reduce((m, x) => Math.max(m, Math.abs(x)), 0) + 1e-5;
    const boundText = '1e-4·max|logit| + 1e-5';
    // qkv webgpu: the same weights, moved.
    model.to('webgpu');
    await setBackend('webgpu');
    const lm = gptAsyncLm(model);
    const got = await generateIds(lm, prompt, w.newTokens);
    checks.push(checkSameIds(`${w.name}: qkv webgpu greedy ids against qkv wasm`, got.ids, ref.ids));
    checks.push(checkClose(`${w.name}: qkv webgpu first logits`, got.first, ref.logits[0]!, () => bound, boundText));
    const q = await tokensPerSecond(() => generateIds(lm, prompt, w.newTokens), w.newTokens, runs);
    const qkv = q.tps;
    const row: Row = {
      workload: w.name,
      unit: 'tokens/s',
      qkv,
      tfjs: null,
      ort: null,
      wasm,
      counts: { qkv: q.counts },
    };
    row.note = 'TensorFlow.js has no GPT';
    if (peers.ort && graph) {
      const session = await ortSession(
        peers.ort,
        graph,
        Array.from({ length: w.config.nLayer }, (_, i) => [`present.${i}.key`, `present.${i}.value`]).flat(),
      );
      graph = null;
      const engine = new OrtGpuGpt(peers.ort, session, w.config);
      const o = await generateIds(engine, prompt, w.newTokens);
      checks.push(checkSameIds(`${w.name}: ONNX Runtime greedy ids against qkv wasm`, o.ids, ref.ids));
      checks.push(checkClose(`${w.name}: ONNX Runtime first logits`, o.first, ref.logits[0]!, () => bound, boundText));
      const t = await tokensPerSecond(() => generateIds(engine, prompt, w.newTokens), w.newTokens, runs);
      row.ort = t.tps;
      row.counts.ort = t.counts;
      engine.dispose();
      await session.release();
    }
    log(
      `${w.name}: qkv webgpu ${qkv.toFixed(1)}, ORT ${row.ort?.toFixed(1) ?? '—'}, qkv wasm ${wasm.toFixed(1)} tokens/s`,
    );
    rows.push(row);
  }
  return { rows, checks };
}
