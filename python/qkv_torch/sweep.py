"""A recipe search on a GPU: qkv's translation recipe (train.py's Run: qkv's batches, loss, Adam and
schedule) trained for many configurations side by side, each scored by greedy val BLEU as it goes.
For ranking recipe choices fast; the model that ships is trained by `qkv train`.

  python3 python/qkv_torch/sweep.py --job '{"name": "base-s1", "base": "sw/j8k", "seed": 1}' --out sw-out
  python3 python/qkv_torch/sweep.py --greedy-check DIR --data val.ids [--limit N]   # a folder's greedy ids (tests)

A job names a base folder (config.json and tokenizer(s) of a qkv run or model, with the `qkv data
encode` files train.ids and val.ids beside them), and overrides: "model" (config.json model fields,
e.g. {"dropout": 0.2}), "recipe" (training.recipe fields: maxTokens, accum, warmup, lrFactor,
labelSmoothing, weightDecay, clipNorm), "seed", "maxSteps", "evalEvery", "idsEvery" (the steps
whose greedy ids are logged; default every evaluation). Weights start fresh (torch's seeded
initialisation, qkv's distributions). Every evalEvery steps the model translates val greedily
(qkv's rule: at most source length + 50 tokens) and out/NAME.jsonl gets a line: step, epoch, train
loss (mean since the last line), val loss, greedy ids (every idsEvery steps); with --refs and the
Hugging Face `tokenizers` and `sacrebleu` packages, also the BLEU of the decoded text
(scripts/sweep-score.mjs rescores the ids with qkv). At the end, the average of the 5 best
evaluations' weights (by BLEU when there is one, else by val loss) is scored the same way and
logged with "average": true; the job's weights and training state are then removed.
"""
import argparse
import json
import os
import shutil
import sys
import time

if __package__ in (None, ''):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    __package__ = 'qkv_torch'  # noqa: A001

import torch  # noqa: E402

from qkv_torch import QkvError  # noqa: E402
from qkv_torch.data import make_batch, read_pairs  # noqa: E402
from qkv_torch.model import Seq2Seq, load_weights, read_config, run_cli  # noqa: E402
from qkv_torch import safetensors  # noqa: E402
from qkv_torch.train import Run, parse_args as train_args  # noqa: E402

RECIPE_KEYS = ('maxTokens', 'accum', 'warmup', 'lrFactor', 'labelSmoothing', 'weightDecay', 'clipNorm')


@torch.no_grad()
def greedy_ids(model, pairs, ids, device, batch=256):
    """qkv's greedy search (src/decode/search.ts) in batches: BOS, then the most probable id until
    EOS or source length + 50 tokens (capped by the position table). Ids without BOS/EOS."""
    pad, bos, eos = ids
    model.eval()
    cap = model.config['maxLen'] - 1
    order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]))
    out = [None] * len(pairs)
    for k in range(0, len(order), batch):
        rows = order[k:k + batch]
        src = make_batch(pairs, rows, pad, bos, eos)[0].to(device)
        limits = torch.tensor([min(len(pairs[i][0]) + 50, cap) for i in rows], device=device)
        memory, src_pad = model.encode(src)
        ys = torch.full((len(rows), 1), bos, dtype=torch.int64, device=device)
        done = torch.zeros(len(rows), dtype=torch.bool, device=device)
        for t in range(int(limits.max())):
            nxt = model.logits(model.decode(ys, memory, src_pad)[:, -1]).argmax(-1)
            nxt = torch.where(done, torch.full_like(nxt, pad), nxt)
            ys = torch.cat([ys, nxt[:, None]], 1)
            done |= (nxt == eos) | (t + 1 >= limits)
            if bool(done.all()):
                break
        for b, i in enumerate(rows):
            seq = []
            for v in ys[b, 1:].tolist():
                if v in (eos, pad):
                    break
                seq.append(v)
            out[i] = seq
    return out


class Scorer:
    """Corpus BLEU of greedy ids with the Hugging Face tokenizer and sacrebleu, when both are there."""

    def __init__(self, tokenizer_path, refs_path):
        self.ok = False
        if not refs_path:
            return
        try:
            import sacrebleu
            from tokenizers import Tokenizer
        except ImportError as e:
            print(f'sweep: no BLEU on this machine ({e}); ids only', file=sys.stderr)
            return
        self.tok = Tokenizer.from_file(tokenizer_path)
        with open(refs_path, encoding='utf-8') as f:
            self.refs = [line.rstrip('\n') for line in f]
        self.bleu = sacrebleu.corpus_bleu
        self.ok = True

    def __call__(self, hyps_ids):
        if not self.ok:
            return None
        hyps = self.tok.decode_batch(hyps_ids, skip_special_tokens=True)
        return round(self.bleu(hyps, [self.refs]).score, 2)


def make_folder(job, out):
    """out/NAME/init: the base's config.json with the job's overrides, and its tokenizer(s)."""
    base = job['base']
    cfg = read_config(base)
    # A job trains a new model: the base's decoding defaults (an α chosen for it, its ensemble) are not its own.
    cfg.pop('decoding', None)
    cfg['model'].update(job.get('model', {}))
    tr = cfg.setdefault('training', {})
    rec = dict(tr.get('recipe') or {})
    for k, v in job.get('recipe', {}).items():
        if k not in RECIPE_KEYS:
            raise QkvError(f"job {job['name']}: unknown recipe field {k!r} (known: {', '.join(RECIPE_KEYS)})")
        rec[k] = v
    rec['seed'] = job.get('seed', rec.get('seed', 1))
    tr['recipe'] = rec
    tr['maxSteps'] = job['maxSteps']
    init = os.path.join(out, job['name'], 'init')
    os.makedirs(init, exist_ok=True)
    # Atomic, as every file the bridge writes: a killed sweep leaves no half file.
    safetensors.atomic_write(os.path.join(init, 'config.json'), json.dumps(cfg, indent=2))
    for name in ('tokenizer.json', 'target_tokenizer.json'):
        if os.path.exists(os.path.join(base, name)):
            with open(os.path.join(base, name), 'rb') as f:
                safetensors.atomic_write(os.path.join(init, name), f.read())
    return init


def run_job(job, out, device, refs):
    job.setdefault('maxSteps', 8000)
    job.setdefault('evalEvery', 500)
    job.setdefault('idsEvery', job['evalEvery'])
    init = make_folder(job, out)
    base = job['base']
    argv = ['--init-from', init, '--out', os.path.join(out, job['name'], 'run'), '--data', os.path.join(base, 'train.ids'),
            '--val', os.path.join(base, 'val.ids'), '--save-every', str(10 ** 9), '--device', device, '--amp', 'off']
    a = train_args(argv)
    dev = torch.device(device)
    run = Run(a, 0, 1, dev)
    run.prepare_out()
    val_pairs, ids = run.val, run.ids
    tgt_tok = os.path.join(init, 'target_tokenizer.json')
    score = Scorer(tgt_tok if os.path.exists(tgt_tok) else os.path.join(init, 'tokenizer.json'), refs)
    log_path = os.path.join(out, f"{job['name']}.jsonl")
    log = open(log_path, 'w', encoding='utf-8')
    params = sum(p.numel() for p in run.model.parameters())
    log.write(json.dumps({'job': job, 'parameters': params, 'batchesPerEpoch': len(run.batches)}) + '\n')
    evals, t0, losses = [], time.perf_counter(), []
    while run.position['step'] < run.max_steps:
        r = run.step()
        losses.append(r['loss'])
        s = r['step']
        if s % job['evalEvery'] == 0 or s == run.max_steps:
            v = run.val_loss()
            hyp = greedy_ids(run.model, val_pairs, ids, dev)
            b = score(hyp)
            e = {'step': s, 'epoch': r['epoch'], 'trainLoss': sum(losses) / len(losses), 'valLoss': v, 'bleu': b,
                 'seconds': round(time.perf_counter() - t0, 1)}
            if s % job['idsEvery'] == 0 or s == run.max_steps:
                e['ids'] = hyp
            losses = []
            log.write(json.dumps(e) + '\n')
            log.flush()
            # Only the 5 best evaluations' weights are kept (for the average at the end).
            evals.append((b if b is not None else -v, s, {n: p.detach().cpu().clone() for n, p in run.model.named_parameters()}))
            evals = sorted(evals, key=lambda x: (-x[0], x[1]))[:5]
            print(f"{job['name']}: step {s} epoch {r['epoch']} val loss {v:.4f} greedy BLEU {b} ({e['seconds']} s)", file=sys.stderr, flush=True)
    best = evals  # the 5 best, as kept above
    avg = {n: sum(w[n].double() for _, _, w in best).div(len(best)).float() for n in best[0][2]}
    run.model.load_state_dict(avg)
    hyp = greedy_ids(run.model, val_pairs, ids, dev)
    b = score(hyp)
    log.write(json.dumps({'average': True, 'steps': [s for _, s, _ in best], 'valLoss': run.val_loss(), 'bleu': b, 'ids': hyp}) + '\n')
    log.close()
    print(f"{job['name']}: best-5 average of steps {[s for _, s, _ in best]}: greedy BLEU {b}", file=sys.stderr, flush=True)
    shutil.rmtree(os.path.join(out, job['name']))  # weights and state: not needed for ranking


def greedy_check(folder, data, device, limit=None):
    """The greedy ids of a trained folder's model.safetensors for an encoded split (its first `limit`
    pairs), as JSON lines."""
    cfg = read_config(folder)
    model = Seq2Seq(cfg['model'])
    load_weights(model, safetensors.read(os.path.join(folder, 'model.safetensors'))[0], folder)
    pairs, meta = read_pairs(data)
    pairs = pairs[:limit] if limit else pairs
    for seq in greedy_ids(model.to(device), pairs, (meta['padId'], meta['bosId'], meta['eosId']), torch.device(device)):
        print(json.dumps(seq))


def main(argv=None):
    ap = argparse.ArgumentParser(prog='sweep.py', description=__doc__.split('\n')[0])
    ap.add_argument('--job', help='one job as JSON')
    ap.add_argument('--out', help='folder for NAME.jsonl')
    ap.add_argument('--refs', help='reference translations of val, one per line (for BLEU here)')
    ap.add_argument('--device', default='cuda' if torch.cuda.is_available() else 'cpu')
    ap.add_argument('--greedy-check', metavar='DIR')
    ap.add_argument('--data', help='with --greedy-check: an encoded split')
    ap.add_argument('--limit', type=int, help='with --greedy-check: only the first N pairs')
    a = ap.parse_args(argv)
    torch.set_num_threads(1)
    if a.greedy_check:
        if not a.data:
            raise QkvError('--greedy-check needs --data')
        return greedy_check(a.greedy_check, a.data, a.device, a.limit)
    if not a.job or not a.out:
        raise QkvError('--job and --out are needed')
    run_job(json.loads(a.job), a.out, a.device, a.refs)


if __name__ == '__main__':
    run_cli(main)
