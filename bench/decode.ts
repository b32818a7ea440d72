/**
 * Greedy decoding of one 20-token sentence with the multi30k-small shape (dModel 256, 4 heads,
 * 3+3 layers, dFf 1024, vocabulary 8000; random weights, exactly 20 generated tokens): qkv with and
 * without its KV cache, against PyTorch 1.13 without a cache (nn.Transformer has none) in the same run.
 * Run: npx tsx bench/decode.ts
 */
import { spawnSync } from 'node:child_process';
import { decode, getBackend, manualSeed, models, Tensor } from '../src/index.ts';

const V = 8000;
const N = 20;
manualSeed(1);
const model = new models.Seq2Seq({ ...models.MULTI30K_SMALL, vocabSize: V }).eval();
const src = new Tensor(
  Int32Array.from({ length: N }, (_, i) => 4 + ((i * 7919) % (V - 4))),
  [1, N],
  'int32',
);
// A zero output row for EOS gives it logit 0, below the maximum of 8,000 random logits: every run
// makes exactly N tokens.
model.embedding.weight.dataSync().fill(0, 3 * 256, 4 * 256);
const opts = { bosId: 2, eosId: 3, maxLen: N };

function median(fn: () => void, runs = 7): number {
  fn();
  const t: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    fn();
    t.push(performance.now() - t0);
  }
  return t.sort((a, b) => a - b)[Math.floor(runs / 2)];
}

const withCache = decode.greedy(model, src, { ...opts, useCache: true });
const without = decode.greedy(model, src, { ...opts, useCache: false });
if (withCache.tokens[0].join() !== without.tokens[0].join() || withCache.tokens[0].length !== N) {
  throw new Error('check failed: greedy with and without the cache differ, or did not make 20 tokens');
}
const qkvCache = median(() => decode.greedy(model, src, { ...opts, useCache: true }));
const qkvNoCache = median(() => decode.greedy(model, src, { ...opts, useCache: false }));

const py = `
import math, time, torch, torch.nn as nn, torch.nn.functional as F
torch.set_num_threads(2); torch.manual_seed(1)
V, D, N = ${V}, 256, ${N}
emb = nn.Embedding(V, D); tf = nn.Transformer(D, 4, 3, 3, 1024, 0.1, batch_first=True).eval()
pe = torch.zeros(512, D); pos = torch.arange(512).unsqueeze(1)
div = torch.exp(torch.arange(0, D, 2) * (-math.log(10000.0) / D)); pe[:, 0::2] = torch.sin(pos * div); pe[:, 1::2] = torch.cos(pos * div)
embed = lambda ids: emb(ids) * math.sqrt(D) + pe[: ids.shape[1]]
src = torch.tensor([[4 + (i * 7919) % (V - 4) for i in range(N)]])
def run():
    with torch.no_grad():
        mem = tf.encoder(embed(src))
        ys = torch.tensor([[2]])
        for _ in range(N):
            h = tf.decoder(embed(ys), mem, tgt_mask=nn.Transformer.generate_square_subsequent_mask(ys.shape[1]))
            nxt = F.linear(h[:, -1], emb.weight).argmax(-1, keepdim=True)
            ys = torch.cat([ys, nxt], 1)
run(); ts = []
for _ in range(7):
    t = time.perf_counter(); run(); ts.append((time.perf_counter() - t) * 1000)
print(sorted(ts)[3])
`;
const p = spawnSync('/usr/bin/python3', ['-c', py], {
  encoding: 'utf8',
  env: { ...process.env, OMP_WAIT_POLICY: 'PASSIVE' },
});
const torchMs = p.status === 0 ? Number(p.stdout.trim()) : null;

console.log(`greedy decoding, 1 sentence, ${N} tokens, backend ${getBackend().name}; medians of 7 (ms)`);
console.log(`qkv with KV cache     ${qkvCache.toFixed(1)}`);
console.log(`qkv without cache     ${qkvNoCache.toFixed(1)}`);
console.log(
  torchMs === null
    ? `PyTorch: skipped (${p.stderr.trim().split('\n').pop() ?? 'no torch'})`
    : `PyTorch without cache ${torchMs.toFixed(1)}   qkv-with-cache / PyTorch = ${(qkvCache / torchMs).toFixed(2)}`,
);
