"""python/qkv_torch/train.py on a GPU, checked against qkv: the inputs come from
scripts/gpu-check/fixture.ts (run where Node is), this runs where the GPU is.

  python3 scripts/gpu-check/check.py FIXTURE_DIR WORK_DIR [--device cuda|cpu] [--steps N]

1. fp32 on the device, one process: train.py's 5 losses and weights against qkv's own 5 steps
   (the CPU tests' tolerances: losses 1e-5 relative, weights 1e-4 + 1e-4·|w|, the attention key
   biases aside, which softmax cancels; then the logits of both weight sets, 1e-4).
2. The same under torchrun with one process: the process group (nccl on CUDA, gloo on the CPU) is
   set up and left as with several; DDP itself wraps the model only from 2 processes on, which
   needs 2 GPUs (one GPU cannot hold two nccl ranks).
3. 3 steps, then --resume to 5: the weights of the straight 5 (1e-6 + 1e-6·|w|).
4. Mixed precision (--amp on; CUDA only): losses within 2% of qkv's fp32 ones (a sanity bound:
   bf16 keeps 8 bits of mantissa), weights finite.
5. Throughput of the shipped EN-DE recipe (fresh weights, Multi30K's ids): N steps in fp32 and,
   on CUDA, in mixed precision; target tokens per second as train.py reports them.
Prints one JSON object (also WORK_DIR/gpu-check.json); exits 1 if a check fails.
"""
import argparse
import json
import os
import re
import subprocess
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', '..', 'python'))
from qkv_torch import safetensors  # noqa: E402
from qkv_torch.model import load_model_dir  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
TRAIN = os.path.join(ROOT, 'python', 'qkv_torch', 'train.py')
ENV = {**os.environ, 'PYTHONPATH': os.path.join(ROOT, 'python'), 'PYTHONUNBUFFERED': '1'}


def run(args, torchrun=False):
    # torch 1.13 under Python 3.11 (Debian's) needs the README's --redirects/--tee workaround.
    fix = ['--redirects', '9:1', '--tee', '9:1'] if torch.__version__.startswith('1.') else []
    cmd = [sys.executable, '-m', 'torch.distributed.run', '--standalone', '--nproc_per_node', '1', *fix, TRAIN] if torchrun else [sys.executable, TRAIN]
    r = subprocess.run(cmd + args, env=ENV, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd + args)} exited {r.returncode}:\n{r.stderr[-3000:]}")
    return r.stderr


def losses(out):
    with open(os.path.join(out, 'train-log.jsonl'), encoding='utf-8') as f:
        return [e['loss'] for e in map(json.loads, filter(None, f.read().split('\n'))) if 'loss' in e]


def weights(path):
    return safetensors.read(path)[0]


def worst_excess(a, b, atol, rtol, d_model):
    """Largest |a - b| - (atol + rtol |b|) over all weights, the attention key biases aside."""
    worst, where = -float('inf'), ''
    for n, y in b.items():
        x = a[n].double().flatten()
        y = y.double().flatten()
        e = (x - y).abs() - (atol + rtol * y.abs())
        if n.endswith('in_proj_bias'):
            e[d_model:2 * d_model] = -float('inf')
        if torch.isnan(e).any():  # a NaN weight on either side fails, naming where
            i = int(torch.nonzero(torch.isnan(e))[0])
            return float('inf'), f'{n}[{i}]: {float(x[i])} vs {float(y[i])}'
        i = int(torch.argmax(e))
        if float(e[i]) > worst:
            worst, where = float(e[i]), f'{n}[{i}]: {float(x[i])} vs {float(y[i])}'
    return worst, where


def logits(model, vocab, w):
    """The model's logits for a fixed batch of token ids with weights w (on the CPU, fp32)."""
    model.load_state_dict(w, strict=True)
    g = torch.Generator().manual_seed(0)
    src = torch.randint(4, vocab, (3, 9), generator=g)
    tgt = torch.randint(4, vocab, (3, 7), generator=g)
    with torch.no_grad():
        return model(src, tgt)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('fixture')
    ap.add_argument('work')
    ap.add_argument('--device', default='cuda', choices=['cuda', 'cpu'])
    ap.add_argument('--steps', type=int, default=600)
    a = ap.parse_args()
    fx, work = os.path.abspath(a.fixture), os.path.abspath(a.work)
    tiny = os.path.join(fx, 'tiny')
    run_dir = os.path.join(tiny, 'qkv-run')
    data = ['--data', os.path.join(tiny, 'train.ids')]
    with open(os.path.join(tiny, 'qkv-losses.json'), encoding='utf-8') as f:
        ref = json.load(f)
    qkv_losses, d_model = ref['losses'], ref['dModel']
    qkv_w = weights(os.path.join(tiny, 'qkv-step5.safetensors'))
    probe, cfg = load_model_dir(run_dir)  # one model, loaded once, for every logits comparison
    vocab = cfg['model']['vocabSize']
    dev = ['--device', a.device] + (['--amp', 'off'] if a.device == 'cuda' else [])
    report = {'device': torch.cuda.get_device_name(0) if a.device == 'cuda' else 'cpu', 'torch': torch.__version__, 'checks': {}}
    ok = True

    def check(name, passed, **facts):
        nonlocal ok
        ok = ok and passed
        report['checks'][name] = {'pass': passed, **facts}
        print(f"{'PASS' if passed else 'FAIL'} {name}: {json.dumps(facts)}", flush=True)

    def against_qkv(name, out, torchrun=False):
        run(['--init-from', run_dir, *data, '--out', out, '--max-steps', '5', *dev], torchrun)
        got = losses(out)
        rel = max(abs(x - y) / y for x, y in zip(got, qkv_losses))
        w = weights(os.path.join(out, 'checkpoints', 'step-0000005.safetensors'))
        excess, where = worst_excess(w, qkv_w, 1e-4, 1e-4, d_model)
        la, lb = logits(probe, vocab, w), logits(probe, vocab, qkv_w)
        lrel = float(((la - lb).abs() / (1 + lb.abs())).max())
        check(name, len(got) == 5 and rel <= 1e-5 and excess <= 0 and lrel < 1e-4,
              losses=got, qkv=qkv_losses, loss_rel=rel, weight_excess=excess, worst=where, logits_rel=lrel)
        return w

    os.makedirs(work, exist_ok=True)
    one = os.path.join(work, 'fp32')
    w5 = against_qkv(f'fp32 on {a.device}, one process: qkv\'s 5 steps', one)
    against_qkv(f'fp32 on {a.device}, torchrun 1 process ({"nccl" if a.device == "cuda" else "gloo"}): qkv\'s 5 steps', os.path.join(work, 'ddp'), torchrun=True)

    res = os.path.join(work, 'resume')
    run(['--init-from', run_dir, *data, '--out', res, '--max-steps', '3', *dev])
    run(['--resume', *data, '--out', res, '--max-steps', '5', *dev])
    wr = weights(os.path.join(res, 'checkpoints', 'step-0000005.safetensors'))
    excess, where = worst_excess(wr, w5, 1e-6, 1e-6, d_model)
    rel = max(abs(x - y) / y for x, y in zip(losses(res), losses(one)))
    check(f'{a.device}: 3 steps, then --resume to 5, equal 5 steps (1e-6)', len(losses(res)) == 5 and rel <= 1e-6 and excess <= 0,
          weight_excess=excess, worst=where, loss_rel=rel)

    if a.device == 'cuda':
        amp = os.path.join(work, 'amp')
        err = run(['--init-from', run_dir, *data, '--out', amp, '--max-steps', '5', '--device', 'cuda', '--amp', 'on'])
        got = losses(amp)
        rel = max(abs(x - y) / y for x, y in zip(got, qkv_losses))
        wa = weights(os.path.join(amp, 'checkpoints', 'step-0000005.safetensors'))
        finite = all(bool(torch.isfinite(t).all()) for t in wa.values())
        dtype = re.search(r'with (torch\.\w+)', err)
        check('mixed precision on cuda: losses within 2% of qkv\'s fp32', len(got) == 5 and rel < 0.02 and finite,
              dtype=dtype.group(1) if dtype else None, losses=got, loss_rel=rel)

    m30k = os.path.join(fx, 'm30k')
    speed = {}
    for mode in (['off', 'on'] if a.device == 'cuda' else [None]):
        out = os.path.join(work, f'm30k-{mode or "cpu"}')
        extra = ['--amp', mode] if mode else []
        err = run(['--init-from', os.path.join(m30k, 'run'), '--data', os.path.join(m30k, 'train.ids'), '--out', out,
                   '--max-steps', str(a.steps), '--save-every', str(10 * a.steps), '--log-every', str(max(1, a.steps // 4)),
                   '--device', a.device, *extra])
        m = re.search(r'trained (\d+) steps in ([\d.]+) s: (\d+) target tokens/s', err)
        speed[mode or 'cpu'] = {'steps': int(m.group(1)), 'seconds': float(m.group(2)), 'target_tokens_per_s': int(m.group(3)),
                                'losses_every_quarter': [float(x) for x in re.findall(r'loss ([\d.]+),', err)]}
    report['m30k_throughput'] = speed
    print(json.dumps(speed), flush=True)
    report['pass'] = ok
    with open(os.path.join(work, 'gpu-check.json'), 'w', encoding='utf-8') as f:
        json.dump(report, f, indent=2)
    sys.exit(0 if ok else 1)


if __name__ == '__main__':
    main()
