"""qkv's two models rebuilt from torch.nn modules, with qkv's state-dict names, so that
`load_state_dict(strict=True)` takes a qkv `model.safetensors` as it is and gives qkv's logits.

  Seq2Seq (config.json format 'qkv-seq2seq', src/models/seq2seq.ts): shared embedding · √d_model
    + sinusoidal positions (§3.4, §3.5), torch.nn.Transformer (batch-first), logits = h·Eᵀ; with
    separate vocabularies (tgtVocabSize) a source table and a target table, the latter tied.
  GPT (format 'qkv-gpt', src/models/gpt.ts): GPT-2's pre-norm blocks of nn.MultiheadAttention and
    an MLP of two nn.Linear with exact GELU, a final LayerNorm, logits = h·wteᵀ.

Command line (for checks and for scripts):
  python3 -m qkv_torch.model DIR                  load a folder, print its kind and parameter count
  python3 -m qkv_torch.model DIR --logits IN OUT  logits of the ids in IN (safetensors: 'src' and
                                                  'tgt' for Seq2Seq, 'ids' for GPT) written to OUT
"""
import argparse
import json
import math
import os
import sys

import torch
import torch.nn.functional as F
from torch import nn

from . import QkvError
from . import safetensors

# ---- Configs ----------------------------------------------------------------------------------

# field -> (type check, description); optional fields have a default (None: derived).
SEQ2SEQ_FIELDS = {
    'vocabSize': 'int>0', 'dModel': 'int>0', 'nhead': 'int>0', 'numEncoderLayers': 'int>=0',
    'numDecoderLayers': 'int>=0', 'dimFeedforward': 'int>0', 'dropout': 'prob', 'activation': ('relu', 'gelu'),
    'normFirst': 'bool', 'maxLen': 'int>0', 'padId': 'int>=0',
}
# tgtVocabSize: separate vocabularies (qkv train --separate-vocab), a target table tgtEmbedding.
SEQ2SEQ_OPTIONAL = {'attentionDropout': 'prob', 'activationDropout': 'prob', 'tgtVocabSize': 'int>0'}
GPT_FIELDS = {
    'vocabSize': 'int>0', 'blockSize': 'int>0', 'nLayer': 'int>0', 'nHead': 'int>0', 'nEmbd': 'int>0',
    'dropout': 'prob', 'positions': ('learned', 'sinusoidal'),
}
# GPT-2 checkpoints (Hugging Face's gpt2) use GELU's tanh approximation; LayerNorm ε defaults to torch's 1e-5.
GPT_OPTIONAL = {'activation': ('gelu', 'gelu_tanh'), 'layerNormEps': 'eps'}
FORMATS = {'qkv-seq2seq': 'Seq2Seq', 'qkv-gpt': 'GPT'}


def _check_field(where, name, kind, v):
    ok = {
        'int>0': lambda: isinstance(v, int) and not isinstance(v, bool) and v > 0,
        'int>=0': lambda: isinstance(v, int) and not isinstance(v, bool) and v >= 0,
        'prob': lambda: isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v < 1,
        'bool': lambda: isinstance(v, bool),
        'eps': lambda: isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v < 1,
    }
    if isinstance(kind, tuple):
        if v not in kind:
            raise QkvError(f"{where}: model.{name} must be one of {', '.join(kind)}, got {json.dumps(v)}")
    elif not ok[kind]():
        expected = {'int>0': 'a positive integer', 'int>=0': 'a non-negative integer', 'prob': 'a number in [0, 1)', 'bool': 'true or false', 'eps': 'a number in (0, 1)'}[kind]
        raise QkvError(f'{where}: model.{name} must be {expected}, got {json.dumps(v)}')


def check_config(cfg, where='config.json'):
    """The model kind ('Seq2Seq' or 'GPT') of a parsed config.json; one clear error otherwise."""
    if not isinstance(cfg, dict):
        raise QkvError(f'{where}: expected a JSON object')
    fmt = cfg.get('format')
    if 'model_type' in cfg and 'format' not in cfg:
        # The folder spec's third kind (docs/model-folder.md): a Hugging Face checkpoint, which
        # transformers reads itself (GPT2LMHeadModel.from_pretrained(DIR)); qkv_torch rebuilds qkv's own two.
        raise QkvError(f"{where}: a Hugging Face folder (model_type {json.dumps(cfg['model_type'])}): load it with transformers "
                       "(GPT2LMHeadModel.from_pretrained); qkv_torch reads format 'qkv-seq2seq' and 'qkv-gpt'")
    if fmt not in FORMATS:
        raise QkvError(f"{where}: unknown format {json.dumps(fmt)}, expected 'qkv-seq2seq' (qkv train) or 'qkv-gpt' (qkv train-lm)")
    model = cfg.get('model')
    if not isinstance(model, dict):
        raise QkvError(f"{where}: format '{fmt}' needs a 'model' object")
    required, optional = (SEQ2SEQ_FIELDS, SEQ2SEQ_OPTIONAL) if fmt == 'qkv-seq2seq' else (GPT_FIELDS, GPT_OPTIONAL)
    for name in model:
        if name not in required and name not in optional:
            raise QkvError(f"{where}: unknown field model.{name} for format '{fmt}' (known: {', '.join([*required, *optional])})")
    for name, kind in required.items():
        if name not in model:
            raise QkvError(f"{where}: model.{name} is missing")
        _check_field(where, name, kind, model[name])
    for name, kind in optional.items():
        if name in model:
            _check_field(where, name, kind, model[name])
    if fmt == 'qkv-seq2seq':
        if model['dModel'] % model['nhead']:
            raise QkvError(f"{where}: model.dModel {model['dModel']} is not divisible by model.nhead {model['nhead']}")
        if model['padId'] >= model['vocabSize']:
            raise QkvError(f"{where}: model.padId {model['padId']} is outside the vocabulary of {model['vocabSize']}")
        if model['padId'] >= model.get('tgtVocabSize', model['vocabSize']):
            raise QkvError(f"{where}: model.padId {model['padId']} is outside the target vocabulary of {model['tgtVocabSize']}")
    elif model['nEmbd'] % model['nHead']:
        raise QkvError(f"{where}: model.nEmbd {model['nEmbd']} is not divisible by model.nHead {model['nHead']}")
    return FORMATS[fmt]


def sinusoidal_table(max_len, d_model):
    """(maxLen, dModel) sines on even columns, cosines on odd (§3.5), computed in float64 as qkv does."""
    t = torch.zeros(max_len, d_model, dtype=torch.float64)
    pos = torch.arange(max_len, dtype=torch.float64)[:, None]
    i = torch.arange(0, d_model, 2, dtype=torch.float64)
    angle = pos / torch.pow(torch.tensor(10000.0, dtype=torch.float64), i / d_model)  # (maxLen, ceil(d/2))
    t[:, 0::2] = torch.sin(angle)
    t[:, 1::2] = torch.cos(angle[:, : d_model // 2])
    return t.to(torch.float32)


# ---- Seq2Seq ----------------------------------------------------------------------------------

class PositionalEncoding(nn.Module):
    """x + PE[:T], then dropout. The table is a buffer that is not saved (qkv does not save it)."""

    def __init__(self, d_model, dropout, max_len):
        super().__init__()
        self.register_buffer('pe', sinusoidal_table(max_len, d_model), persistent=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):  # x (B, T, dModel)
        T = x.shape[1]
        if T > self.pe.shape[0]:
            raise QkvError(f'PositionalEncoding: sequence length {T} exceeds maxLen {self.pe.shape[0]}')
        return self.dropout(x + self.pe[:T].to(x.dtype))


class Seq2Seq(nn.Module):
    """The paper's translation model; state-dict names are qkv's (embedding.weight, transformer.*)."""

    def __init__(self, config):
        super().__init__()
        c = self.config = dict(config)
        p_attn = c.get('attentionDropout', c['dropout'])
        p_act = c.get('activationDropout', c['dropout'])
        self.embedding = nn.Embedding(c['vocabSize'], c['dModel'], padding_idx=c['padId'])
        self.positions = PositionalEncoding(c['dModel'], c['dropout'], c['maxLen'])
        self.transformer = nn.Transformer(
            d_model=c['dModel'], nhead=c['nhead'], num_encoder_layers=c['numEncoderLayers'],
            num_decoder_layers=c['numDecoderLayers'], dim_feedforward=c['dimFeedforward'], dropout=c['dropout'],
            activation=c['activation'], batch_first=True, norm_first=c['normFirst'])
        # torch.nn uses one dropout everywhere; qkv's config may set the attention weights' and the
        # feed-forward activation's apart (default: dropout), which these two attributes are.
        for layer in [*self.transformer.encoder.layers, *self.transformer.decoder.layers]:
            for attn in (getattr(layer, 'self_attn', None), getattr(layer, 'multihead_attn', None)):
                if attn is not None:
                    attn.dropout = p_attn
            layer.dropout.p = p_act
        # Padded positions keep their values (as qkv's) instead of nested tensors' zeros.
        self.transformer.encoder.enable_nested_tensor = False
        # qkv's initialisation: the Transformer's own Xavier-uniform, the tied embedding N(0, dModel^-0.5).
        nn.init.normal_(self.embedding.weight, 0, c['dModel'] ** -0.5)
        with torch.no_grad():
            self.embedding.weight[c['padId']].zero_()
        # Separate vocabularies: the target's own table, embedding target ids and projecting onto them.
        self.tgtEmbedding = None
        if 'tgtVocabSize' in c:
            self.tgtEmbedding = nn.Embedding(c['tgtVocabSize'], c['dModel'], padding_idx=c['padId'])
            nn.init.normal_(self.tgtEmbedding.weight, 0, c['dModel'] ** -0.5)
            with torch.no_grad():
                self.tgtEmbedding.weight[c['padId']].zero_()

    def target_table(self):
        return self.tgtEmbedding if self.tgtEmbedding is not None else self.embedding

    def embed(self, ids, table=None):  # (B, T) -> (B, T, dModel)
        return self.positions((table or self.embedding)(ids) * math.sqrt(self.config['dModel']))

    def encode(self, src):
        """The encoder's memory (B, S, dModel) for src (B, S), and src's padding mask (True = padding)."""
        src_pad = src == self.config['padId']
        return self.transformer.encoder(self.embed(src), src_key_padding_mask=src_pad), src_pad

    def decode(self, tgt_in, memory, src_pad):
        """The decoder's output (B, T, dModel) for the shifted target (B, T), causally masked."""
        T = tgt_in.shape[1]
        causal = torch.triu(torch.full((T, T), float('-inf'), device=tgt_in.device), diagonal=1)  # (T, T)
        return self.transformer.decoder(self.embed(tgt_in, self.target_table()), memory, tgt_mask=causal,
                                        tgt_key_padding_mask=tgt_in == self.config['padId'], memory_key_padding_mask=src_pad)

    def logits(self, h):
        return F.linear(h, self.target_table().weight)  # tied output projection (§3.4)

    def forward(self, src, tgt_in):
        """Teacher-forced logits (B, T, vocab) for src (B, S) and the shifted target (B, T)."""
        return self.logits(self.decode(tgt_in, *self.encode(src)))


# ---- GPT --------------------------------------------------------------------------------------

class MLP(nn.Module):
    def __init__(self, n_embd, dropout, activation):
        super().__init__()
        self.c_fc = nn.Linear(n_embd, 4 * n_embd)
        self.c_proj = nn.Linear(4 * n_embd, n_embd)
        self.dropout = nn.Dropout(dropout)
        self.approximate = 'tanh' if activation == 'gelu_tanh' else 'none'

    def forward(self, x):
        return self.dropout(self.c_proj(F.gelu(self.c_fc(x), approximate=self.approximate)))


class Block(nn.Module):
    """Pre-norm: x + attn(ln_1(x)), then x + mlp(ln_2(x))."""

    def __init__(self, c):
        super().__init__()
        eps = c.get('layerNormEps', 1e-5)
        self.ln_1 = nn.LayerNorm(c['nEmbd'], eps=eps)
        self.attn = nn.MultiheadAttention(c['nEmbd'], c['nHead'], dropout=c['dropout'], batch_first=True)
        self.ln_2 = nn.LayerNorm(c['nEmbd'], eps=eps)
        self.mlp = MLP(c['nEmbd'], c['dropout'], c.get('activation', 'gelu'))
        self.resid_dropout = nn.Dropout(c['dropout'])

    def forward(self, x, causal):
        h = self.ln_1(x)
        x = x + self.resid_dropout(self.attn(h, h, h, attn_mask=causal, need_weights=False)[0])
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, config):
        super().__init__()
        c = self.config = dict(config)
        self.wte = nn.Embedding(c['vocabSize'], c['nEmbd'])
        self.wpe = nn.Embedding(c['blockSize'], c['nEmbd']) if c['positions'] == 'learned' else None
        if c['positions'] == 'sinusoidal':
            self.register_buffer('pe', sinusoidal_table(c['blockSize'], c['nEmbd']), persistent=False)
        self.drop = nn.Dropout(c['dropout'])
        self.h = nn.ModuleList([Block(c) for _ in range(c['nLayer'])])
        self.ln_f = nn.LayerNorm(c['nEmbd'], eps=c.get('layerNormEps', 1e-5))
        resid_std = 0.02 / math.sqrt(2 * c['nLayer'])
        for name, p in self.named_parameters():
            if name.endswith('bias'):
                nn.init.zeros_(p)
            elif name.startswith('ln_') or '.ln_' in name:
                nn.init.ones_(p)
            elif name.endswith('out_proj.weight') or name.endswith('c_proj.weight'):
                nn.init.normal_(p, 0, resid_std)
            else:
                nn.init.normal_(p, 0, 0.02)

    def forward(self, ids):
        """Next-token logits (B, T, vocab) for ids (B, T)."""
        T = ids.shape[1]
        if T > self.config['blockSize']:
            raise QkvError(f"GPT: {T} positions exceed the context of blockSize {self.config['blockSize']}")
        pos = self.wpe(torch.arange(T, device=ids.device)) if self.wpe is not None else self.pe[:T]
        x = self.drop(self.wte(ids) + pos)
        causal = torch.triu(torch.ones(T, T, dtype=torch.bool, device=ids.device), diagonal=1)  # True = blocked
        for block in self.h:
            x = block(x, causal)
        return F.linear(self.ln_f(x), self.wte.weight)


# ---- Folders ----------------------------------------------------------------------------------
#
# A model folder as docs/model-folder.md specifies it (the TypeScript side: src/folder/): config.json
# (format 'qkv-seq2seq' or 'qkv-gpt', checked field by field above), model.safetensors (fp32, fp16,
# bf16, or qkv's int8 rows with NAME_scale), tokenizer.json (and target_tokenizer.json with separate
# vocabularies), read with the same messages: `model folder not found`, `model config not found`,
# `model weights not found`, each naming the path.

def read_config(folder):
    path = os.path.join(folder, 'config.json')
    if not os.path.isdir(folder):
        raise QkvError(f'model folder not found: {folder}')
    try:
        with open(path, encoding='utf-8') as f:
            cfg = json.load(f)
    except FileNotFoundError:
        raise QkvError(f'model config not found: {path}') from None
    except ValueError as e:
        raise QkvError(f'model config is not valid JSON: {path} ({e})') from None
    check_config(cfg, path)
    return cfg


def build(cfg):
    """A model (random weights) for a checked config.json."""
    return Seq2Seq(cfg['model']) if cfg['format'] == 'qkv-seq2seq' else GPT(cfg['model'])


def check_state_dict(model, tensors, where):
    """One clear line for a missing key, an extra key or a wrong shape (before load_state_dict)."""
    expected = model.state_dict()
    for name, t in expected.items():
        if name not in tensors:
            raise QkvError(f'{where}: missing tensor {name!r} (expected shape {list(t.shape)})')
    for name, t in tensors.items():
        if name not in expected:
            raise QkvError(f'{where}: unexpected tensor {name!r} (shape {list(t.shape)}), not part of this model')
        if list(t.shape) != list(expected[name].shape):
            raise QkvError(f'{where}: tensor {name!r} has shape {list(t.shape)}, the model expects {list(expected[name].shape)}')
        if not t.is_floating_point():
            raise QkvError(f'{where}: tensor {name!r} is {t.dtype}, expected floating point')


SCALE_SUFFIX = '_scale'


def dequantize_int8(tensors, where):
    """qkv's int8 weights (src/tensor/quantize.ts) as float32: each int8 NAME with a float NAME_scale of
    shape [rows, 1] beside it becomes NAME * NAME_scale, and the scale is dropped."""
    out = dict(tensors)
    for name, q in tensors.items():
        s = tensors.get(name + SCALE_SUFFIX)
        if q.dtype != torch.int8 or s is None or not s.is_floating_point():
            continue
        if q.dim() != 2 or list(s.shape) != [q.shape[0], 1]:
            raise QkvError(f'{where}: int8 weight {name!r} {list(q.shape)} needs {name + SCALE_SUFFIX!r} of shape [rows, 1], got {list(s.shape)}')
        s = s.to(torch.float32)
        if not bool(torch.all(torch.isfinite(s) & (s >= 0))):
            raise QkvError(f'{where}: int8 weight {name!r} has a scale that is negative or not finite: the file is corrupt')
        out[name] = q.to(torch.float32) * s
        del out[name + SCALE_SUFFIX]
    return out


def load_weights(model, tensors, where):
    """Load fp32, fp16, bf16 or qkv int8 tensors strictly (as float32 values)."""
    tensors = dequantize_int8(tensors, where)
    check_state_dict(model, tensors, where)
    model.load_state_dict({k: v.to(torch.float32) for k, v in tensors.items()}, strict=True)


def load_model_dir(folder, weights='model.safetensors'):
    """(model in eval mode, config) of a qkv model folder."""
    cfg = read_config(folder)
    model = build(cfg)
    path = os.path.join(folder, weights)
    if not os.path.exists(path):
        raise QkvError(f'model weights not found: {path}')
    tensors, _, _ = safetensors.read(path)
    load_weights(model, tensors, path)
    model.eval()
    return model, cfg


def main(argv=None):
    ap = argparse.ArgumentParser(prog='python3 -m qkv_torch.model', description='load a qkv model folder in PyTorch')
    ap.add_argument('folder')
    ap.add_argument('--weights', default='model.safetensors')
    ap.add_argument('--logits', nargs=2, metavar=('IN', 'OUT'))
    a = ap.parse_args(argv)
    model, cfg = load_model_dir(a.folder, a.weights)
    n = sum(p.numel() for p in model.parameters())
    print(f"{cfg['format']}: {n} parameters")
    if a.logits:
        ids, _, _ = safetensors.read(a.logits[0])
        with torch.no_grad():
            if cfg['format'] == 'qkv-seq2seq':
                logits = model(ids['src'].long(), ids['tgt'].long())
            else:
                logits = model(ids['ids'].long())
        safetensors.write(a.logits[1], {'logits': logits.float()})


def run_cli(fn):
    """Run a command; a QkvError is one line on stderr and exit status 1."""
    try:
        fn()
    except QkvError as e:
        print(f'error: {e}', file=sys.stderr)
        sys.exit(1)


if __name__ == '__main__':
    run_cli(main)
