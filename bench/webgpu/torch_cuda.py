#!/usr/bin/env python3
"""PyTorch on CUDA beside qkv's WebGPU benchmark (bench/webgpu/node-bench.ts runs it with --torch; not for
direct use). argv[1]: JSON {jobs: [...], time: {samples, minMs, capMs}} with the same workloads and names as
the WebGPU rows. Prints one JSON line {version, device, values: {name: GFLOP/s | ms | tokens/s}, note}.

Timing as the page's timeCall: a warm-up call, then samples of R calls each closed by one synchronize, R so
that a sample lasts minMs; the median. float32 everywhere with TF32 off (set_float32_matmul_precision
'highest'), as WebGPU has no TF32. The training step reads its loss (loss.item()) every step, as qkv does;
greedy decoding takes the argmax on the GPU and reads the id (.item()) each token, as PyTorch users write it
(qkv reads the last row of logits instead).
"""
import json, math, sys, time

import torch
import torch.nn as nn
import torch.nn.functional as F

spec = json.loads(sys.argv[1])
T = spec["time"]
torch.set_float32_matmul_precision("highest")
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
dev = torch.device("cuda")
torch.manual_seed(0)
sync = torch.cuda.synchronize


def timed(fn):
    t0 = time.perf_counter(); fn(); sync(); first = (time.perf_counter() - t0) * 1e3
    if first > T["capMs"]:
        t0 = time.perf_counter(); fn(); sync()
        return (time.perf_counter() - t0) * 1e3
    reps = max(1, math.ceil(T["minMs"] / max(first, 0.05)))
    ts = []
    for _ in range(T["samples"]):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        sync()
        ts.append((time.perf_counter() - t0) * 1e3 / reps)
    ts.sort()
    return ts[len(ts) // 2]


class Block(nn.Module):
    def __init__(self, E, H):
        super().__init__()
        self.H = H
        self.ln1, self.ln2 = nn.LayerNorm(E), nn.LayerNorm(E)
        self.qkv, self.proj = nn.Linear(E, 3 * E), nn.Linear(E, E)
        self.fc, self.out = nn.Linear(E, 4 * E), nn.Linear(4 * E, E)

    def forward(self, x, cache):
        B, L, E = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(E, dim=2)
        q, k, v = (t.view(B, L, self.H, E // self.H).transpose(1, 2) for t in (q, k, v))
        if cache is not None:
            k, v = torch.cat([cache[0], k], 2), torch.cat([cache[1], v], 2)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=cache is None)
        x = x + self.proj(a.transpose(1, 2).reshape(B, L, E))
        return x + self.out(F.gelu(self.fc(self.ln2(x)))), (k, v)


class GPT(nn.Module):
    def __init__(self, V, P, N, H, E):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(V, E), nn.Embedding(P, E)
        self.blocks = nn.ModuleList(Block(E, H) for _ in range(N))
        self.ln = nn.LayerNorm(E)

    def forward(self, ids, pos, caches):
        x = self.wte(ids) + self.wpe(torch.arange(pos, pos + ids.shape[1], device=ids.device))
        new = []
        for b, c in zip(self.blocks, caches):
            x, kv = b(x, c)
            new.append(kv)
        return self.ln(x[:, -1]) @ self.wte.weight.t(), new


values = {}
for w in spec["jobs"]:
    kind, name = w["kind"], w["name"]
    if kind == "gemm":
        m, k, n, ta, tb = w["m"], w["k"], w["n"], w["ta"], w["tb"]
        a = torch.randn(k, m, device=dev) if ta else torch.randn(m, k, device=dev)
        b = torch.randn(n, k, device=dev) if tb else torch.randn(k, n, device=dev)
        c = torch.empty(m, n, device=dev)
        A, B = (a.t() if ta else a), (b.t() if tb else b)
        values[name] = 2 * m * n * k / (timed(lambda: torch.matmul(A, B, out=c)) * 1e6)
    elif kind == "mha":
        N, L, E, H = w["B"], w["L"], w["E"], w["H"]
        mha = nn.MultiheadAttention(E, H, batch_first=True, dropout=0.0).to(dev)
        x = torch.randn(N, L, E, device=dev, requires_grad=w["backward"])
        if w["backward"]:
            r = torch.randn(N, L, E, device=dev)

            def step():
                mha.zero_grad(); x.grad = None
                y, _ = mha(x, x, x, need_weights=False)
                (y * r).sum().backward()
            values[name] = timed(step)
        else:
            mha.eval()
            with torch.no_grad():
                values[name] = timed(lambda: mha(x, x, x, need_weights=False))
    elif kind == "train":
        c = w["cfg"]
        V, D, Hh, NE, ND, FF, P = c["vocab"], c["dModel"], c["nhead"], c["enc"], c["dec"], c["dff"], c["dropout"]
        PA, PF, WD = c["attnDropout"], c["actDropout"], c["weightDecay"]
        Bn, Tn = w["b"], w["t"]
        emb = nn.Embedding(V, D, padding_idx=0)
        nn.init.normal_(emb.weight, 0, D ** -0.5)
        tf = nn.Transformer(D, Hh, NE, ND, FF, P, batch_first=True)
        for layer in [*tf.encoder.layers, *tf.decoder.layers]:
            layer.self_attn.dropout = PA
            if hasattr(layer, "multihead_attn"):
                layer.multihead_attn.dropout = PA
            layer.dropout.p = PF
        pe = torch.zeros(512, D)
        pos = torch.arange(512).unsqueeze(1)
        div = torch.exp(torch.arange(0, D, 2) * (-math.log(10000.0) / D))
        pe[:, 0::2] = torch.sin(pos * div); pe[:, 1::2] = torch.cos(pos * div)
        emb, tf, pe = emb.to(dev), tf.to(dev), pe.to(dev)
        drop = nn.Dropout(P)
        params = [*emb.parameters(), *tf.parameters()]
        opt = (torch.optim.AdamW(params, lr=1e-4, betas=(0.9, 0.98), eps=1e-9, weight_decay=WD) if WD > 0 else
               torch.optim.Adam(params, lr=1e-4, betas=(0.9, 0.98), eps=1e-9))
        ids = torch.tensor(w["ids"], dtype=torch.long, device=dev).view(Bn, Tn)
        mask = nn.Transformer.generate_square_subsequent_mask(Tn, device=dev)

        def step():
            e = drop(emb(ids) * math.sqrt(D) + pe[:Tn])
            sp = ids == 0
            h = tf(e, e, tgt_mask=mask, src_key_padding_mask=sp, tgt_key_padding_mask=sp, memory_key_padding_mask=sp)
            loss = F.cross_entropy(F.linear(h, emb.weight).reshape(-1, V), ids.reshape(-1), ignore_index=0,
                                   label_smoothing=0.1)
            opt.zero_grad(); loss.backward(); opt.step()
            return loss.item()
        values[name] = timed(step)
    elif kind == "gpt":
        model = GPT(w["vocab"], w["block"], w["layers"], w["heads"], w["embd"]).to(dev).eval()
        prompt = torch.tensor([w["prompt"]], device=dev)
        n = w["newTokens"]

        @torch.no_grad()
        def gen():
            logits, caches = model(prompt, 0, [None] * w["layers"])
            nxt = int(logits.argmax(-1).item())
            pos = prompt.shape[1]
            for _ in range(n - 1):
                logits, caches = model(torch.tensor([[nxt]], device=dev), pos, caches)
                nxt = int(logits.argmax(-1).item())
                pos += 1
        gen()
        ts = []
        for _ in range(max(1, min(3, T["samples"]))):
            t0 = time.perf_counter(); gen(); sync(); ts.append(time.perf_counter() - t0)
        ts.sort()
        values[name] = n / ts[len(ts) // 2]
print(json.dumps({"version": torch.__version__, "device": torch.cuda.get_device_name(0), "values": values,
                  "note": "its own GPT-2 module (SDPA attention, KV cache by concatenation), not qkv's weights"}))
