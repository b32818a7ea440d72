/**
 * GPT-2 124M-shaped generation: a GPT with GPT-2 small's shape (12 layers, 12 heads, 768 wide,
 * vocabulary 50,257, context 1,024, gelu_tanh; random weights) continues an 8-token prompt by 64
 * tokens, greedy, with the KV cache: qkv on the wasm backend against PyTorch 1.13 (2 threads, its
 * own KV cache, the same equations) in the same run. Before timing, qkv's cached generation is
 * checked against recomputing without the cache.
 *   npx tsx bench/gpt2.ts               the real shape (bench/index.ts runs it)
 *   npx tsx bench/gpt2.ts --smoke       a tiny shape, to check the script works
 *   npx tsx bench/gpt2.ts --no-peers    qkv only
 * The last line printed is JSON: { qkv_ms, qkv_tps, torch_ms, torch_tps, note }.
 * The shape, the prompt and the timed greedy decoding are exported for bench/gpt2-quantized.ts, which runs the
 * same model in low precision; importing this file runs nothing.
 */
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { decode, getBackend, manualSeed, models } from '../src/index.ts';

export const smoke = process.argv.includes('--smoke');
export const withPeers = !process.argv.includes('--no-peers');
/** GPT-2 small's shape (random weights, no dropout); with --smoke a tiny one. */
export const cfg: models.GPTConfig = smoke
  ? {
      vocabSize: 1000,
      blockSize: 128,
      nLayer: 2,
      nHead: 2,
      nEmbd: 64,
      dropout: 0,
      positions: 'learned',
      activation: 'gelu_tanh',
    }
  : { ...models.GPT2_124M, dropout: 0 };
/** Tokens generated per timed run, and the runs (their median is the time). */
export const NEW = smoke ? 8 : 64;
export const RUNS = smoke ? 1 : 3;
export const prompt = Array.from({ length: 8 }, (_, i) => (i * 7919 + 13) % cfg.vocabSize);

/** Greedy continuation of the prompt by n tokens, with or without the KV cache: the ids. */
export const greedy = (model: models.GPT, useCache: boolean, n = NEW) =>
  decode.generate(model, prompt, { maxTokens: n, temperature: 0, useCache }).ids;

/** Throws unless `check` greedy tokens with the KV cache equal recomputing without it (also a warm-up). */
export function checkCache(model: models.GPT, check: number, what: string): void {
  const a = greedy(model, true, check);
  const b = greedy(model, false, check);
  if (a.join() !== b.join())
    throw new Error(`check failed: ${what} with the KV cache (${a}) differs from recomputing (${b})`);
  console.log(`check: ${what}: ${check} greedy tokens with the KV cache = without it (${getBackend().name} backend)`);
}

/** RUNS timed greedy generations of NEW tokens with the KV cache: the median milliseconds, the last run's ids. */
export function timeGreedy(model: models.GPT): { ms: number; ids: number[] } {
  const times: number[] = [];
  let ids: number[] = [];
  for (let r = 0; r < RUNS; r++) {
    const t0 = performance.now();
    ids = greedy(model, true);
    times.push(performance.now() - t0);
    if (ids.length !== NEW) throw new Error(`expected ${NEW} tokens, got ${ids.length}`);
  }
  return { ms: times.sort((x, y) => x - y)[times.length >> 1]!, ids };
}

function main(): void {
  manualSeed(1);
  const model = new models.GPT(cfg).eval();
  checkCache(model, Math.min(NEW, 6), 'qkv');
  const qkvMs = timeGreedy(model).ms;
  console.log(
    `qkv ${getBackend().name}: ${NEW} tokens in ${qkvMs.toFixed(0)} ms = ${((1000 * NEW) / qkvMs).toFixed(1)} tokens/s (${model.numParameters().toLocaleString('en-US')} parameters)`,
  );
  let torchMs: number | null = null;
  let note = '';
  if (withPeers) {
    const p = spawnSync('/usr/bin/python3', ['-c', py], {
      encoding: 'utf8',
      env: { ...process.env, OMP_WAIT_POLICY: 'PASSIVE', OMP_NUM_THREADS: '2' },
    });
    if (p.status === 0) torchMs = Number(p.stdout.trim().split('\n').pop());
    else note = `PyTorch: skipped (${p.stderr.trim().split('\n').pop() ?? 'no torch'})`;
    console.log(
      torchMs === null
        ? note
        : `PyTorch: ${NEW} tokens in ${torchMs.toFixed(0)} ms = ${((1000 * NEW) / torchMs).toFixed(1)} tokens/s; qkv / PyTorch time = ${(qkvMs / torchMs).toFixed(2)}`,
    );
  }
  console.log(
    JSON.stringify({
      qkv_ms: qkvMs,
      qkv_tps: (1000 * NEW) / qkvMs,
      torch_ms: torchMs,
      torch_tps: torchMs === null ? null : (1000 * NEW) / torchMs,
      note,
    }),
  );
}

const py = `
import math, sys, time, torch
torch.set_num_threads(2); torch.manual_seed(1)
V, P, L, H, E, NEW, RUNS = ${cfg.vocabSize}, ${cfg.blockSize}, ${cfg.nLayer}, ${cfg.nHead}, ${cfg.nEmbd}, ${NEW}, ${RUNS}
d = E // H
g = lambda *s: torch.randn(*s) * 0.02
wte, wpe = g(V, E), g(P, E)
layers = [dict(ln1=(torch.ones(E), torch.zeros(E)), attn=(g(E, 3 * E), torch.zeros(3 * E)), proj=(g(E, E), torch.zeros(E)),
               ln2=(torch.ones(E), torch.zeros(E)), fc=(g(E, 4 * E), torch.zeros(4 * E)), mproj=(g(4 * E, E), torch.zeros(E))) for _ in range(L)]
lnf = (torch.ones(E), torch.zeros(E))
ln = lambda x, p: torch.nn.functional.layer_norm(x, (E,), p[0], p[1], 1e-5)
def step(ids, cache, t0):
    T = ids.shape[0]
    x = wte[ids] + wpe[t0:t0 + T]
    for i, p in enumerate(layers):
        q, k, v = (ln(x, p['ln1']) @ p['attn'][0] + p['attn'][1]).split(E, -1)
        q, k, v = (u.view(T, H, d).transpose(0, 1) for u in (q, k, v))
        if cache[i] is not None:
            k = torch.cat([cache[i][0], k], 1); v = torch.cat([cache[i][1], v], 1)
        cache[i] = (k, v)
        o = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=T > 1) if hasattr(torch.nn.functional, 'scaled_dot_product_attention') else None
        if o is None:
            s = q @ k.transpose(-1, -2) / math.sqrt(d)
            if T > 1: s = s.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float('-inf'))
            o = torch.softmax(s, -1) @ v
        x = x + o.transpose(0, 1).reshape(T, E) @ p['proj'][0] + p['proj'][1]
        x = x + torch.nn.functional.gelu(ln(x, p['ln2']) @ p['fc'][0] + p['fc'][1], approximate='tanh') @ p['mproj'][0] + p['mproj'][1]
    return ln(x[-1:], lnf) @ wte.T
def gen():
    ids = torch.tensor(${JSON.stringify(prompt)}); cache = [None] * L
    with torch.no_grad():
        logits = step(ids, cache, 0); n = ids.shape[0]; out = []
        for _ in range(NEW):
            nxt = logits[-1].argmax().view(1); out.append(int(nxt)); logits = step(nxt, cache, n); n += 1
    return out
gen(); ts = []
for _ in range(RUNS):
    t = time.perf_counter(); gen(); ts.append((time.perf_counter() - t) * 1000)
print(sorted(ts)[len(ts) // 2])
`;

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
