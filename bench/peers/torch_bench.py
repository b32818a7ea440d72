#!/usr/bin/env python3
"""PyTorch side of `npm run bench` (bench/index.ts runs it; not for direct use).

Reads the workload list as JSON from argv[1], runs each with the same shapes, seeds-independent
inputs and timing rule as the TypeScript side (median of timed samples after a warm-up), prints one
JSON object {name: {"ms": median, "peak_mb": ...}} on stdout. Threads: torch.set_num_threads(N) from
argv[2]; the caller sets OMP_WAIT_POLICY=PASSIVE so idle OpenMP threads do not spin.
"""
import json, math, resource, sys, time

import torch
import torch.nn as nn
import torch.nn.functional as F

work = json.loads(sys.argv[1])
torch.set_num_threads(int(sys.argv[2]))
torch.manual_seed(0)


def timed(fn, min_ms=20.0, samples=5, cap_s=3.0):
    t0 = time.perf_counter(); fn(); first = time.perf_counter() - t0
    if first > cap_s:
        return first * 1e3
    reps = max(1, math.ceil(min_ms / 1e3 / max(first, 1e-5)))
    fn()
    ts = []
    for _ in range(samples):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        ts.append((time.perf_counter() - t0) / reps)
    ts.sort()
    return ts[len(ts) // 2] * 1e3


def maxrss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


out = {}
for w in work:
    kind, name = w["kind"], w["name"]
    if kind == "gemm":
        m, k, n, ta, tb = w["m"], w["k"], w["n"], w["ta"], w["tb"]
        a = torch.randn(k, m) if ta else torch.randn(m, k)
        b = torch.randn(n, k) if tb else torch.randn(k, n)
        c = torch.empty(m, n)
        A = a.t() if ta else a
        B = b.t() if tb else b
        out[name] = {"ms": timed(lambda: torch.matmul(A, B, out=c))}
    elif kind in ("mha_fwd", "mha_fwdbwd", "mha_long"):
        N, L, E, H = w["b"], w["l"], w["e"], w["h"]
        mha = nn.MultiheadAttention(E, H, batch_first=True, dropout=0.0)
        x = torch.randn(N, L, E, requires_grad=(kind == "mha_fwdbwd"))
        if kind == "mha_fwdbwd":
            r = torch.randn(N, L, E)

            def step():
                mha.zero_grad(); x.grad = None
                y, _ = mha(x, x, x, need_weights=False)
                (y * r).sum().backward()
            out[name] = {"ms": timed(step)}
        else:
            before = rss_mb()
            with torch.no_grad():
                ms = timed(lambda: mha(x, x, x, need_weights=False), samples=3 if kind == "mha_long" else 5)
            out[name] = {"ms": ms, "peak_mb": maxrss_mb() - before}
    elif kind == "train":
        c = w["cfg"]
        V, D, Hh, NE, ND, FF, P = c["vocab"], c["dModel"], c["nhead"], c["enc"], c["dec"], c["dff"], c["dropout"]
        PA, PF, WD = c.get("attnDropout", P), c.get("actDropout", P), c.get("weightDecay", 0)
        B, T = w["b"], w["t"]

        class Seq2Seq(nn.Module):
            def __init__(self):
                super().__init__()
                self.emb = nn.Embedding(V, D, padding_idx=0)
                nn.init.normal_(self.emb.weight, 0, D ** -0.5)
                pe = torch.zeros(512, D)
                pos = torch.arange(512).unsqueeze(1)
                div = torch.exp(torch.arange(0, D, 2) * (-math.log(10000.0) / D))
                pe[:, 0::2] = torch.sin(pos * div); pe[:, 1::2] = torch.cos(pos * div)
                self.register_buffer("pe", pe)
                self.drop = nn.Dropout(P)
                self.tf = nn.Transformer(D, Hh, NE, ND, FF, P, batch_first=True)
                # torch's one dropout also covers attention weights and the feed-forward activation:
                # set those apart, as qkv's attentionDropout and activationDropout.
                for layer in [*self.tf.encoder.layers, *self.tf.decoder.layers]:
                    layer.self_attn.dropout = PA
                    if hasattr(layer, "multihead_attn"):
                        layer.multihead_attn.dropout = PA
                    layer.dropout.p = PF

            def embed(self, ids):
                return self.drop(self.emb(ids) * math.sqrt(D) + self.pe[: ids.shape[1]])

            def forward(self, src, tgt):
                sp, tp = src == 0, tgt == 0
                mask = nn.Transformer.generate_square_subsequent_mask(tgt.shape[1])
                h = self.tf(self.embed(src), self.embed(tgt), tgt_mask=mask, src_key_padding_mask=sp,
                            tgt_key_padding_mask=tp, memory_key_padding_mask=sp)
                return F.linear(h, self.emb.weight)

        ids = torch.tensor(w["ids"], dtype=torch.long).view(B, T)
        model = Seq2Seq()
        if WD > 0:
            opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9, weight_decay=WD)
        else:
            opt = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9)

        def step():
            logits = model(ids, ids)
            loss = F.cross_entropy(logits.reshape(-1, V), ids.reshape(-1), ignore_index=0, label_smoothing=0.1)
            opt.zero_grad(); loss.backward(); opt.step()
        out[name] = {"ms": timed(step, samples=3, cap_s=60)}
print(json.dumps(out))
