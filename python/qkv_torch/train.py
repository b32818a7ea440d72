"""qkv's translation recipe (§5 of the paper, src/train/trainer.ts) in PyTorch, one process or many
under torchrun with DistributedDataParallel. The batches are qkv's (same planner, same seeded epoch
order, read from `qkv data encode` files), the loss is qkv's (label-smoothed cross-entropy averaged
over each batch's target tokens), the optimiser is torch.optim.Adam with the paper's β 0.9/0.98,
ε 1e-9 and warmup schedule, which qkv's Adam matches step for step.

  torchrun --nproc_per_node N python/qkv_torch/train.py --init-from runs/A --data train.ids --out runs/B
  torchrun --nnodes M --nproc_per_node N --rdzv_backend c10d --rdzv_endpoint HOST:PORT python/qkv_torch/train.py ...

One optimiser step takes world size × --accum consecutive batches of qkv's batch order (qkv's own
`accum`: a run that qkv trained with accum 4 continues here on 4 processes, or 2 with --accum 2);
each process takes its --accum of them, and the step's gradient is the mean of the batches'
mean-loss gradients, as qkv's Trainer computes it with accum = world size × --accum.
The run folder is a qkv run: config.json, tokenizer.json, model.safetensors, train-state.safetensors
(weights, Adam moments, step and batch position, in Trainer.saveState's layout) and
checkpoints/step-N.safetensors, so `qkv train --resume` continues it and qkv's tools open it.
"""
import argparse
import contextlib
import ctypes
import glob
import hashlib
import json
import os
import signal
import sys
import threading
import time
from datetime import timedelta

if __package__ in (None, ''):  # run as a script (torchrun python/qkv_torch/train.py): import the package beside it
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    __package__ = 'qkv_torch'  # noqa: A001

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from qkv_torch import QkvError  # noqa: E402
from qkv_torch import fault, safetensors  # noqa: E402
from qkv_torch.data import Generator, epoch_order, make_batch, plan_batches, read_pairs  # noqa: E402
from qkv_torch.model import Seq2Seq, load_weights, read_config, run_cli  # noqa: E402

STATE = 'train-state.safetensors'
LOG = 'train-log.jsonl'

# qkv's PAPER_RECIPE (src/train/trainer.ts); a run's config.json or training state overrides it.
PAPER_RECIPE = {'maxTokens': 4096, 'warmup': 4000, 'lrFactor': 1, 'labelSmoothing': 0.1, 'seed': 1, 'clipNorm': 0,
                'betas': [0.9, 0.98], 'eps': 1e-9, 'weightDecay': 0}


def noam_lr(step, d_model, warmup, factor):
    """§5.3: d_model^-0.5 · min(step^-0.5, step · warmup^-1.5), step counted from 1."""
    return factor * d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)


def parse_args(argv):
    ap = argparse.ArgumentParser(prog='train.py', description="qkv's translation recipe under torchrun (DistributedDataParallel)")
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument('--init-from', metavar='DIR', help='a qkv run or model folder: config.json, tokenizer.json, and train-state.safetensors (weights, Adam, step) or model.safetensors (weights) or neither (fresh weights)')
    src.add_argument('--resume', action='store_true', help='continue the run in --out from its last checkpoint')
    ap.add_argument('--out', required=True, metavar='DIR', help='run folder to write (a qkv run: qkv train --resume continues it)')
    ap.add_argument('--data', required=True, metavar='FILE', help='training pairs from `qkv data encode`')
    ap.add_argument('--val', metavar='FILE', help='validation pairs from `qkv data encode` (loss at --eval-every and at the end)')
    ap.add_argument('--max-steps', type=int, help="stop after this many steps (default: the run's config.json training.maxSteps)")
    ap.add_argument('--max-tokens', type=int, help='padded tokens per global batch (qkv --max-tokens)')
    ap.add_argument('--accum', type=int, help="batches per step and process (gradient accumulation); a step takes world size × this many. Default: the run's accum (batches per step) / world size when the run has accum > 1, else 1")
    ap.add_argument('--warmup', type=int)
    ap.add_argument('--lr-factor', type=float)
    ap.add_argument('--label-smoothing', type=float)
    ap.add_argument('--weight-decay', type=float, help='AdamW decoupled weight decay (0: Adam, the paper)')
    ap.add_argument('--clip-norm', type=float)
    ap.add_argument('--seed', type=int)
    ap.add_argument('--save-every', type=int, default=100)
    ap.add_argument('--eval-every', type=int, default=0)
    ap.add_argument('--keep', type=int, default=5, help='checkpoints kept and averaged at the end (§6.1: 5)')
    ap.add_argument('--log-every', type=int, default=10)
    ap.add_argument('--device', default='auto', choices=['auto', 'cpu', 'cuda'])
    ap.add_argument('--amp', default='auto', choices=['auto', 'on', 'off'], help='mixed precision (CUDA only; auto: on with CUDA)')
    a = ap.parse_args(argv)
    for name in ('max_steps', 'max_tokens', 'accum', 'warmup', 'save_every', 'keep', 'log_every'):
        v = getattr(a, name)
        if v is not None and v < (0 if name == 'max_steps' else 1):
            raise QkvError(f"--{name.replace('_', '-')} must be a positive integer, got {v}")
    if a.eval_every < 0:
        raise QkvError(f'--eval-every must be >= 0, got {a.eval_every}')
    return a


# ---- Processes ----------------------------------------------------------------------------------

def die_with_parent():
    """Linux: a worker whose launcher (torchrun) is killed dies too, instead of training on alone."""
    with contextlib.suppress(Exception):
        libc = ctypes.CDLL('libc.so.6', use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        if os.getppid() == 1:
            os._exit(1)


def setup_processes(device_flag):
    """(rank, world size, device); under torchrun the process group: nccl with CUDA, else gloo."""
    world = int(os.environ.get('WORLD_SIZE', '1'))
    rank = int(os.environ.get('RANK', '0'))
    local = int(os.environ.get('LOCAL_RANK', '0'))
    use_cuda = device_flag == 'cuda' or (device_flag == 'auto' and torch.cuda.is_available())
    if use_cuda and not torch.cuda.is_available():
        raise QkvError('--device cuda: no CUDA device is available')
    device = torch.device(f'cuda:{local}' if use_cuda else 'cpu')
    if use_cuda:
        torch.cuda.set_device(device)
    if 'WORLD_SIZE' in os.environ:
        die_with_parent()
        dist.init_process_group(backend='nccl' if use_cuda else 'gloo')
    return rank, world, device


def leave_process_group(lead, teardown_s=30):
    """The end of a run under torchrun, with no collective after the last step. Once in CI, rank 0
    sat forever in a final barrier after rank 1 had passed it and exited (not reproduced in 80 runs
    since, loaded or not): a gloo rank that exits right after a collective closes its sockets while
    the peer may still be reading. So no rank closes anything until every rank is past its last
    collective: rank 0 posts to the rendezvous store once every file is written, the other ranks
    wait for that post (rank 0's last evaluation and averaging can take long), and each then tears
    its group down, which is local. Should that hang anyway, the process ends after `teardown_s`:
    its work is on disk by then."""
    store = dist.distributed_c10d._get_default_store()
    if lead:
        store.set('qkv/finished', '1')
    else:
        store.wait(['qkv/finished'], timedelta(days=1))
    done = threading.Event()

    def watchdog():
        if not done.wait(teardown_s):
            print(f'train.py: the process group did not shut down in {teardown_s} s; exiting (every file is written)', file=sys.stderr, flush=True)
            os._exit(0)

    threading.Thread(target=watchdog, daemon=True).start()
    dist.destroy_process_group()
    done.set()


# ---- Run folders --------------------------------------------------------------------------------

def clean_temporaries(out):
    """Temporary files of writes a killed process never renamed."""
    for f in glob.glob(os.path.join(out, '*.tmp-*')) + glob.glob(os.path.join(out, 'checkpoints', '*.tmp-*')):
        with contextlib.suppress(FileNotFoundError):
            os.remove(f)


def list_checkpoints(out):
    return sorted(glob.glob(os.path.join(out, 'checkpoints', 'step-[0-9]*.safetensors')))


def read_state(path):
    tensors, meta, _ = safetensors.read(path)
    if 'trainer' not in meta:
        raise QkvError(f'{path}: no trainer metadata (not a training state)')
    try:
        trainer = json.loads(meta['trainer'])
        pos = trainer['position']
        int(pos['step']), int(pos['epoch']), int(pos['batchInEpoch']), int(trainer['adamStep'])
    except (ValueError, KeyError, TypeError) as e:
        raise QkvError(f'{path}: trainer metadata is not a qkv training state ({e})') from None
    return tensors, trainer


def sha256(path):
    with open(path, 'rb') as f:
        return hashlib.sha256(f.read()).hexdigest()


def truncate_log(out, step):
    """Keep the log lines of steps up to the checkpoint (a killed run may have logged past it)."""
    path = os.path.join(out, LOG)
    if not os.path.exists(path):
        return
    keep = []
    with open(path, encoding='utf-8') as f:
        for line in f:
            try:
                e = json.loads(line)
            except ValueError:
                continue  # a line cut short by a kill
            if e.get('step', 0) <= step and line.endswith('\n'):
                keep.append(line)
    safetensors.atomic_write(path, ''.join(keep))


# ---- Training -----------------------------------------------------------------------------------

class Run:
    def __init__(self, a, rank, world, device):
        self.a, self.rank, self.world, self.device = a, rank, world, device
        folder = a.out if a.resume else a.init_from
        out_state = os.path.join(a.out, STATE)
        if a.resume and not os.path.exists(out_state):
            raise QkvError(f'--resume: no training state in {a.out} ({STATE} not found)')
        if not a.resume and os.path.exists(out_state):
            raise QkvError(f'{a.out} already holds a training run; pass --resume to continue it, or choose another --out')
        self.cfg = read_config(folder)
        if self.cfg['format'] != 'qkv-seq2seq':
            raise QkvError(f"{os.path.join(folder, 'config.json')}: train.py trains translation models (format 'qkv-seq2seq'), got '{self.cfg['format']}'")
        self.folder = folder
        self.tokenizer = os.path.join(folder, 'tokenizer.json')
        if not os.path.exists(self.tokenizer):
            raise QkvError(f'tokenizer not found: {self.tokenizer}')
        mc = self.cfg['model']
        # Separate vocabularies (qkv train --separate-vocab): the target's tokenizer travels too.
        self.target_tokenizer = os.path.join(folder, 'target_tokenizer.json') if 'tgtVocabSize' in mc else None
        if self.target_tokenizer and not os.path.exists(self.target_tokenizer):
            raise QkvError(f'tokenizer not found: {self.target_tokenizer} (config.json has model.tgtVocabSize: separate vocabularies)')

        # The recipe: qkv's paper recipe < the run's config.json < its training state < flags.
        state_path = os.path.join(folder, STATE)
        weights_path = os.path.join(folder, 'model.safetensors')
        self.state = read_state(state_path) if os.path.exists(state_path) else None
        training = self.cfg.get('training') if isinstance(self.cfg.get('training'), dict) else {}
        o = dict(PAPER_RECIPE)
        o.update({k: v for k, v in (training.get('recipe') or {}).items() if k in PAPER_RECIPE})
        saved = self.state[1]['options'] if self.state else {}
        o.update({k: v for k, v in saved.items() if k in PAPER_RECIPE})
        flags = {'maxTokens': a.max_tokens, 'warmup': a.warmup, 'lrFactor': a.lr_factor, 'labelSmoothing': a.label_smoothing,
                 'seed': a.seed, 'clipNorm': a.clip_norm, 'weightDecay': a.weight_decay}
        for k, v in flags.items():
            if v is None:
                continue
            if self.state and k in ('seed', 'maxTokens') and v != saved.get(k):
                raise QkvError(f"--{'seed' if k == 'seed' else 'max-tokens'} {v} differs from the run's {saved.get(k)} (its batch order depends on it); start from its model.safetensors instead")
            o[k] = v
        # qkv's accum is the batches per optimiser step: here world size × batches per process.
        run_accum = int(saved.get('accum', (training.get('recipe') or {}).get('accum', 1)))
        if a.accum is not None:
            self.accum = a.accum
        elif run_accum == 1:  # no accumulation chosen: one batch per process
            self.accum = 1
        elif run_accum % world:  # keep the run's global batch, split over the processes
            raise QkvError(f'world size {world} does not divide the run\'s {run_accum} batches per step (accum {run_accum}); '
                           f'use a world size that divides it, or --accum K for world size × K batches per step')
        else:
            self.accum = run_accum // world
        o['accum'] = world * self.accum
        self.options = o
        self.max_steps = a.max_steps if a.max_steps is not None else training.get('maxSteps')
        if not isinstance(self.max_steps, int):
            raise QkvError(f"--max-steps is needed ({os.path.join(folder, 'config.json')} has no training.maxSteps)")

        # The data: qkv's ids, qkv's batches.
        self.pairs, meta = read_pairs(a.data)
        self.check_data(meta, a.data)
        self.val = None
        if a.val:
            self.val, vmeta = read_pairs(a.val)
            self.check_data(vmeta, a.val)
        self.ids = (meta['padId'], meta['bosId'], meta['eosId'])
        self.batches = plan_batches(self.pairs, o['maxTokens'])

        # The model and optimiser, from the state, the weights or fresh (seeded).
        torch.manual_seed(o['seed'])
        self.model = Seq2Seq(mc)
        self.names = [n for n, _ in self.model.named_parameters()]
        if self.state:
            load_weights(self.model, {k[len('model.'):]: v for k, v in self.state[0].items() if k.startswith('model.')}, state_path)
        elif os.path.exists(weights_path):
            load_weights(self.model, safetensors.read(weights_path)[0], weights_path)
        self.model.to(device)
        params = [p for _, p in self.model.named_parameters()]
        kw = {'lr': 0.0, 'betas': tuple(o['betas']), 'eps': o['eps']}
        self.opt = torch.optim.AdamW(params, weight_decay=o['weightDecay'], **kw) if o['weightDecay'] > 0 else torch.optim.Adam(params, **kw)
        if self.state:
            tensors, trainer = self.state
            for n, p in zip(self.names, params):
                m, v = tensors.get(f'adam.m.{n}'), tensors.get(f'adam.v.{n}')
                if m is None or v is None:
                    raise QkvError(f"{state_path}: missing Adam state for '{n}'")
                if list(m.shape) != list(p.shape) or list(v.shape) != list(p.shape):
                    raise QkvError(f"{state_path}: Adam state for '{n}' has shape {list(m.shape)}, the parameter {list(p.shape)}")
                self.opt.state[p] = {'step': torch.tensor(float(trainer['adamStep'])), 'exp_avg': m.float().to(device).clone(),
                                     'exp_avg_sq': v.float().to(device).clone()}
            self.adam_step = int(trainer['adamStep'])
            self.position = dict(trainer['position'])
        else:
            self.adam_step = 0
            self.position = {'step': 0, 'epoch': 0, 'batchInEpoch': 0, 'rng': Generator(o['seed']).get_state()}
        self.order = epoch_order(len(self.batches), o['seed'], self.position['epoch'])
        # The only buffers are the constant position tables: nothing to broadcast at each forward.
        self.ddp = torch.nn.parallel.DistributedDataParallel(self.model, broadcast_buffers=False) if world > 1 else None
        amp = a.amp == 'on' or (a.amp == 'auto' and device.type == 'cuda')
        if amp and device.type != 'cuda':
            raise QkvError('--amp on needs CUDA (this run is on the CPU)')
        self.amp_dtype = (torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16) if amp else None
        self.scaler = torch.cuda.amp.GradScaler() if self.amp_dtype == torch.float16 else None

    def check_data(self, meta, path):
        mc = self.cfg['model']
        if meta['vocabSize'] != mc['vocabSize'] or meta['padId'] != mc['padId']:
            raise QkvError(f"{path}: encoded with a vocabulary of {meta['vocabSize']} (pad {meta['padId']}), the model has {mc['vocabSize']} (pad {mc['padId']})")
        if meta.get('tokenizerSha256') and meta['tokenizerSha256'] != sha256(self.tokenizer):
            raise QkvError(f'{path}: encoded with another tokenizer than {self.tokenizer} (re-run qkv data encode --model {self.folder})')
        if meta.get('tgtVocabSize') != mc.get('tgtVocabSize'):
            raise QkvError(f"{path}: encoded with a target vocabulary of {meta.get('tgtVocabSize', 'the shared one')}, the model has {mc.get('tgtVocabSize', 'one shared vocabulary')} (re-run qkv data encode --model {self.folder})")
        if self.target_tokenizer and meta.get('targetTokenizerSha256') != sha256(self.target_tokenizer):
            raise QkvError(f'{path}: encoded with another target tokenizer than {self.target_tokenizer} (re-run qkv data encode --model {self.folder})')

    # -- the step --

    def next_batch(self):
        pos = self.position
        if pos['batchInEpoch'] >= len(self.order):
            pos['epoch'] += 1
            pos['batchInEpoch'] = 0
            self.order = epoch_order(len(self.batches), self.options['seed'], pos['epoch'])
        b = self.batches[self.order[pos['batchInEpoch']]]
        pos['batchInEpoch'] += 1
        return b

    def loss_sum(self, net, pairs, indices, smoothing):
        """The label-smoothed cross-entropy of a batch, summed over its target tokens."""
        pad, bos, eos = self.ids
        src, tin, tout, _ = make_batch(pairs, indices, pad, bos, eos)
        src, tin, tout = src.to(self.device), tin.to(self.device), tout.to(self.device)
        with torch.autocast(self.device.type, dtype=self.amp_dtype) if self.amp_dtype else contextlib.nullcontext():
            logits = net(src, tin)  # (B, T, vocab)
        return F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), tout.reshape(-1), ignore_index=pad,
                               label_smoothing=smoothing, reduction='sum')

    def step(self):
        """One optimiser step on the next world size × accum batches: each process takes accum of them."""
        o, K, W = self.options, self.accum, self.world
        batches = [self.next_batch() for _ in range(W * K)]  # every process draws them all, in qkv's order
        tokens = sum(len(self.pairs[i][1]) + 1 for b in batches for i in b)
        self.model.train()
        self.opt.zero_grad(set_to_none=False)
        total = torch.zeros((), dtype=torch.float64)
        for k in range(K):
            indices = batches[k * W + self.rank]
            n = sum(len(self.pairs[i][1]) + 1 for i in indices)
            # Dropout masks are a function of (seed, step, rank, micro-batch): a resumed run draws the same.
            torch.manual_seed((o['seed'] * 1000003 + self.position['step'] * 7919 + self.rank * 131 + k) % (2 ** 63))
            sync = self.ddp is None or k == K - 1
            with contextlib.nullcontext() if sync else self.ddp.no_sync():
                mean = self.loss_sum(self.ddp or self.model, self.pairs, indices, o['labelSmoothing']) / n
                # DDP averages the W processes' gradients; / K averages this process's batches.
                loss = mean / K
                (self.scaler.scale(loss) if self.scaler else loss).backward()
            total += mean.detach().double().cpu()
        if self.ddp is not None:
            dist.all_reduce(total)
        if self.scaler:
            self.scaler.unscale_(self.opt)
        if o['clipNorm'] > 0:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), o['clipNorm'])
        self.position['step'] += 1
        lr = noam_lr(self.position['step'], self.cfg['model']['dModel'], o['warmup'], o['lrFactor'])
        for g in self.opt.param_groups:
            g['lr'] = lr
        if self.scaler:
            scale = self.scaler.get_scale()
            self.scaler.step(self.opt)
            self.scaler.update()
            stepped = self.scaler.get_scale() >= scale  # fp16 overflow: the scaler skipped Adam's step
        else:
            self.opt.step()
            stepped = True
        self.adam_step += 1 if stepped else 0
        return {'step': self.position['step'], 'epoch': self.position['epoch'], 'loss': float(total) / (W * K), 'lr': lr, 'targetTokens': tokens}

    def val_loss(self):
        self.model.eval()
        total, count = 0.0, 0
        with torch.no_grad():
            for idx in plan_batches(self.val, self.options['maxTokens']):
                total += float(self.loss_sum(self.model, self.val, idx, 0.0))  # this process alone: no DDP collectives
                count += sum(len(self.val[i][1]) + 1 for i in idx)
        return total / count

    # -- files (rank 0) --

    def weights(self):
        return {n: p.detach().float().cpu() for n, p in self.model.named_parameters()}

    def save_state(self):
        """Trainer.saveState's layout: model.*, adam.m.*, adam.v.* and the trainer metadata."""
        tensors = {}
        for n, p in zip(self.names, self.model.parameters()):
            st = self.opt.state.get(p, {})
            tensors[f'model.{n}'] = p.detach().float().cpu()
            tensors[f'adam.m.{n}'] = st['exp_avg'].float().cpu() if 'exp_avg' in st else torch.zeros_like(p, device='cpu')
            tensors[f'adam.v.{n}'] = st['exp_avg_sq'].float().cpu() if 'exp_avg_sq' in st else torch.zeros_like(p, device='cpu')
        opts = {k: v for k, v in self.options.items()}
        meta = {'position': self.position, 'adamStep': self.adam_step, 'options': opts}
        return safetensors.dumps(tensors, {'trainer': json.dumps(meta)})

    def prepare_out(self):
        out = self.a.out
        os.makedirs(os.path.join(out, 'checkpoints'), exist_ok=True)
        clean_temporaries(out)
        if self.a.resume:
            truncate_log(out, self.position['step'])
            return
        cfg = dict(self.cfg)
        cfg['training'] = {**(self.cfg.get('training') or {}), 'recipe': self.options, 'maxSteps': self.max_steps,
                           'trainer': 'qkv_torch.train', 'worldSize': self.world, 'initFrom': self.a.init_from, 'torchData': self.a.data}
        safetensors.atomic_write(os.path.join(out, 'config.json'), json.dumps(cfg, indent=2) + '\n')
        for src, name in ((self.tokenizer, 'tokenizer.json'), (self.target_tokenizer, 'target_tokenizer.json')):
            if src:
                with open(src, 'rb') as f:
                    safetensors.atomic_write(os.path.join(out, name), f.read())
        hist = os.path.join(self.folder, 'history.json')
        if os.path.exists(hist):
            with open(hist, 'rb') as f:
                safetensors.atomic_write(os.path.join(out, 'history.json'), f.read())
        safetensors.atomic_write(os.path.join(out, LOG), '')
        if not os.path.exists(os.path.join(out, 'model.safetensors')):
            safetensors.write(os.path.join(out, 'model.safetensors'), self.weights())

    def log(self, entry):
        with open(os.path.join(self.a.out, LOG), 'a', encoding='utf-8') as f:
            f.write(json.dumps(entry) + '\n')
            f.flush()
            os.fsync(f.fileno())

    def checkpoint(self):
        """The step's weights, then the training state (the truth a resume starts from), then pruning."""
        out = self.a.out
        w = self.weights()
        safetensors.write(os.path.join(out, 'checkpoints', f"step-{self.position['step']:07d}.safetensors"), w)
        safetensors.atomic_write(os.path.join(out, STATE), self.save_state())
        for f in list_checkpoints(out)[:-self.a.keep]:
            os.remove(f)
        safetensors.write(os.path.join(out, 'model.safetensors'), w)

    def finish(self):
        """§6.1: the final model averages the last checkpoints."""
        ckpts = list_checkpoints(self.a.out)[-self.a.keep:]
        if len(ckpts) > 1:
            sets = [safetensors.read(f)[0] for f in ckpts]
            avg = {n: sum(s[n].double() for s in sets).div(len(sets)).float() for n in sets[0]}
            safetensors.write(os.path.join(self.a.out, 'model.safetensors'), avg)
            return len(ckpts)
        return 0


def main(argv=None):
    a = parse_args(argv)
    rank, world, device = setup_processes(a.device)
    run = Run(a, rank, world, device)
    lead = rank == 0
    say = (lambda s: print(s, file=sys.stderr, flush=True)) if lead else (lambda s: None)
    if lead:
        run.prepare_out()
    if world > 1:
        dist.barrier()
    say(f"{sum(p.numel() for p in run.model.parameters())} parameters, {len(run.batches)} batches per epoch, "
        f"world size {world} × accum {run.accum} = {run.options['accum']} batches per step on {device}{' with ' + str(run.amp_dtype) if run.amp_dtype else ''}, "
        f"from step {run.position['step']}")
    t0, tokens, steps = time.perf_counter(), 0, 0
    while run.position['step'] < run.max_steps:
        r = run.step()
        tokens += r['targetTokens']
        steps += 1
        if lead:
            fault.point('step', step=r['step'])  # crash tests: QKV_FAULT=step:step=N
            run.log(r)
            if r['step'] % a.log_every == 0 or r['step'] == run.max_steps:
                say(f"step {r['step']}/{run.max_steps}: loss {r['loss']:.4f}, lr {r['lr']:.3e}, epoch {r['epoch']}, "
                    f"{tokens / (time.perf_counter() - t0):.0f} target tokens/s")
            if r['step'] % a.save_every == 0 or r['step'] == run.max_steps:
                run.checkpoint()
            if run.val and a.eval_every and r['step'] % a.eval_every == 0:
                v = run.val_loss()
                run.log({'step': r['step'], 'valLoss': v})
                say(f"step {r['step']}: val loss {v:.4f}")
    dt = time.perf_counter() - t0
    if steps:
        say(f'trained {steps} steps in {dt:.1f} s: {tokens / dt:.0f} target tokens/s')
    if lead:
        if not os.path.exists(os.path.join(a.out, STATE)):
            run.checkpoint()
        n = run.finish()
        if n:
            say(f'model.safetensors: the average of the last {n} checkpoints')
        if run.val:
            v = run.val_loss()
            run.log({'step': run.position['step'], 'valLoss': v, 'final': True})
            say(f'val loss {v:.4f} (step {run.position["step"]} weights)')
        say(f'done: {a.out}')
    if world > 1:
        leave_process_group(lead)


if __name__ == '__main__':
    run_cli(main)
