"""qkv's batches, exactly: a split's token ids as `qkv data encode` wrote them, grouped by
src/data/batching.ts's token-budget planner, shuffled per epoch with qkv's seeded generator
(xoshiro128** in src/tensor/random.ts), padded the same way. Same ids, same batches, same order.

An encoded split is a safetensors file of four flat int32 arrays: src.ids, src.offsets, tgt.ids,
tgt.offsets (pair i's source is src.ids[src.offsets[i]:src.offsets[i+1]]), and metadata naming the
special ids and the tokenizer.
"""
import torch

from . import QkvError
from . import safetensors

M32 = 0xFFFFFFFF


class Generator:
    """qkv's Generator (splitmix32 seeding, xoshiro128** draws): the same numbers as in Node."""

    def __init__(self, seed=0):
        self.manual_seed(seed)

    def manual_seed(self, seed):
        x = seed & M32

        def nxt():
            nonlocal x
            x = (x + 0x9E3779B9) & M32
            z = x
            z = ((z ^ (z >> 16)) * 0x85EBCA6B) & M32
            z = ((z ^ (z >> 13)) * 0xC2B2AE35) & M32
            return (z ^ (z >> 16)) & M32

        self.s = [nxt(), nxt(), nxt(), nxt()]
        self.spare = None
        return self

    def get_state(self):
        """As qkv's getState(): four words and the Box-Muller spare (null when none)."""
        return [*self.s, self.spare]

    def next_uint32(self):
        s0, s1, s2, s3 = self.s
        r = (s1 * 5) & M32
        result = ((((r << 7) | (r >> 25)) & M32) * 9) & M32
        t = (s1 << 9) & M32
        s2 ^= s0
        s3 ^= s1
        s1 ^= s2
        s0 ^= s3
        s2 ^= t
        s3 = ((s3 << 11) | (s3 >> 21)) & M32
        self.s = [s0, s1, s2, s3]
        return result

    def uniform(self):
        return (self.next_uint32() >> 8) / 16777216

    def int(self, n):
        return int(self.uniform() * n)


def read_pairs(path):
    """(pairs, meta): pairs as (src ids, tgt ids) lists, meta the file's metadata (special ids...)."""
    tensors, meta, _ = safetensors.read(path)
    if meta.get('format') != 'qkv-encoded-pairs':
        raise QkvError(f"{path}: not a split written by `qkv data encode` (metadata format {meta.get('format')!r}, expected 'qkv-encoded-pairs')")
    for k in ('src.ids', 'src.offsets', 'tgt.ids', 'tgt.offsets'):
        if k not in tensors or tensors[k].dim() != 1:
            raise QkvError(f'{path}: missing the flat array {k!r}')
    sides = []
    for side in ('src', 'tgt'):
        ids = tensors[f'{side}.ids'].tolist()
        off = tensors[f'{side}.offsets'].tolist()
        if not off or off[0] != 0 or off[-1] != len(ids) or any(a > b for a, b in zip(off, off[1:])):
            raise QkvError(f'{path}: {side}.offsets must rise from 0 to {len(ids)} (the length of {side}.ids)')
        sides.append([ids[a:b] for a, b in zip(off, off[1:])])
    if len(sides[0]) != len(sides[1]):
        raise QkvError(f'{path}: {len(sides[0])} source sentences but {len(sides[1])} target sentences')
    ids = {k: int(meta[k]) for k in ('padId', 'bosId', 'eosId', 'vocabSize', 'tgtVocabSize') if k in meta}
    return list(zip(*sides)), {**meta, **ids}


def plan_batches(pairs, max_tokens):
    """planBatches: pair indices grouped so that B·max(S, T+1) stays within max_tokens."""
    if not max_tokens > 0:
        raise QkvError(f'--max-tokens must be positive, got {max_tokens}')
    order = sorted(range(len(pairs)), key=lambda i: (len(pairs[i][1]), len(pairs[i][0]), i))
    batches, cur, cur_max = [], [], 0
    for i in order:
        n = max(len(pairs[i][0]), len(pairs[i][1]) + 1)
        if n > max_tokens:
            raise QkvError(f'pair {i} needs {n} tokens, more than --max-tokens {max_tokens}')
        if cur and max(cur_max, n) * (len(cur) + 1) > max_tokens:
            batches.append(cur)
            cur, cur_max = [], 0
        cur.append(i)
        cur_max = max(cur_max, n)
    if cur:
        batches.append(cur)
    return batches


def epoch_order(num_batches, seed, epoch):
    """epochOrder: Fisher-Yates seeded by (seed, epoch)."""
    g = Generator((seed * 1000003 + epoch * 7919) & M32)
    order = list(range(num_batches))
    for i in range(num_batches - 1, 0, -1):
        j = g.int(i + 1)
        order[i], order[j] = order[j], order[i]
    return order


def make_batch(pairs, indices, pad, bos, eos):
    """makeBatch: (src (B, S), tgt_in (B, T), tgt_out (B, T), target tokens) as int64 tensors."""
    B = len(indices)
    S = max(1, *(len(pairs[i][0]) for i in indices))
    T = max(len(pairs[i][1]) for i in indices) + 1
    src = torch.full((B, S), pad, dtype=torch.int64)
    tin = torch.full((B, T), pad, dtype=torch.int64)
    tout = torch.full((B, T), pad, dtype=torch.int64)
    n = 0
    for b, i in enumerate(indices):
        s, t = pairs[i]
        if s:
            src[b, :len(s)] = torch.tensor(s)
        tin[b, 0] = bos
        if t:
            tin[b, 1:len(t) + 1] = torch.tensor(t)
            tout[b, :len(t)] = torch.tensor(t)
        tout[b, len(t)] = eos
        n += len(t) + 1
    return src, tin, tout, n

