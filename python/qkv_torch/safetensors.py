"""The safetensors format in a few lines, with qkv's bounds checks (src/io/safetensors.ts).

Layout: an 8-byte little-endian u64 N, N bytes of UTF-8 JSON (maybe padded with spaces), then the
data. The JSON maps each name to {"dtype", "shape", "data_offsets": [begin, end]} (offsets from the
first data byte) and may hold "__metadata__", an object of strings. Everything in the header is
checked before any tensor is decoded, so a damaged file gives one clear `safetensors:` line.
"""
import ctypes
import json
import os
import sys
import time

import torch

from . import QkvError
from . import fault

MAX_HEADER_BYTES = 100_000_000

# Tests only: seconds to pause inside every write, so that a kill can be aimed at one (the crash test).
SLOW_WRITES = float(os.environ.get('QKV_TORCH_SLOW_WRITES', '0'))

# name -> (torch dtype, item size, rank in the reference implementation's alignment order)
DTYPES = {
    'BOOL': (torch.bool, 1, 0), 'U8': (torch.uint8, 1, 1), 'I8': (torch.int8, 1, 2),
    'I16': (torch.int16, 2, 5), 'F16': (torch.float16, 2, 7), 'BF16': (torch.bfloat16, 2, 8),
    'I32': (torch.int32, 4, 9), 'F32': (torch.float32, 4, 11), 'F64': (torch.float64, 8, 12),
    'I64': (torch.int64, 8, 13),
}
TORCH_TO_NAME = {v[0]: k for k, v in DTYPES.items()}


def fail(message):
    raise QkvError(f'safetensors: {message}')


def _is_count(v):
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def parse(data, where='file'):
    """(tensors, metadata, dtypes) from the bytes of a safetensors file."""
    if len(data) < 8:
        fail(f'{where} is {len(data)} bytes, shorter than the 8-byte header length prefix')
    n = int.from_bytes(data[:8], 'little')
    if n > MAX_HEADER_BYTES:
        fail(f'{where}: header length {n} bytes is larger than the {MAX_HEADER_BYTES}-byte limit')
    if n > len(data) - 8:
        fail(f'{where}: header length {n} bytes is larger than the {len(data) - 8} bytes after the length prefix (truncated file?)')
    try:
        header = json.loads(bytes(data[8:8 + n]).decode('utf-8'))
    except (UnicodeDecodeError, ValueError) as e:
        fail(f'{where}: header is not valid UTF-8 JSON ({e})')
    if not isinstance(header, dict):
        fail(f'{where}: header must be a JSON object')
    start = 8 + n
    data_len = len(data) - start
    metadata = {}
    entries = []
    for name, raw in header.items():
        if name == '__metadata__':
            if not isinstance(raw, dict) or not all(isinstance(v, str) for v in raw.values()):
                fail(f'{where}: __metadata__ must be an object of strings')
            metadata = dict(raw)
            continue
        q = repr(name[:200])
        if not isinstance(raw, dict) or not all(k in raw for k in ('dtype', 'shape', 'data_offsets')):
            fail(f'{where}: tensor {q} must be an object with dtype, shape, data_offsets')
        dt = raw['dtype']
        if dt not in DTYPES:
            fail(f'{where}: tensor {q} has unknown or unsupported dtype {dt!r} (supported: {", ".join(DTYPES)})')
        shape = raw['shape']
        if not isinstance(shape, list) or not all(_is_count(d) for d in shape):
            fail(f'{where}: tensor {q} has shape {shape!r}, expected a list of non-negative integers')
        offs = raw['data_offsets']
        if not isinstance(offs, list) or len(offs) != 2 or not all(_is_count(o) for o in offs):
            fail(f'{where}: tensor {q} has data_offsets {offs!r}, expected [begin, end]')
        begin, end = offs
        if begin > end:
            fail(f'{where}: tensor {q} has data_offsets [{begin}, {end}] with begin > end')
        if end > data_len:
            fail(f'{where}: tensor {q} has data_offsets [{begin}, {end}] but the data after the header is only {data_len} bytes (truncated file?)')
        numel = 1
        for d in shape:
            numel *= d
        if numel * DTYPES[dt][1] != end - begin:
            fail(f'{where}: tensor {q} has shape {shape} ({numel} elements of {dt}) but data_offsets span {end - begin} bytes')
        entries.append((name, dt, shape, begin, end))
    spans = sorted((e for e in entries if e[4] > e[3]), key=lambda e: (e[3], e[4]))
    for a, b in zip(spans, spans[1:]):
        if b[3] < a[4]:
            fail(f'{where}: tensors {a[0]!r} and {b[0]!r} overlap')
    tensors, dtypes = {}, {}
    for name, dt, shape, begin, end in entries:
        tdt, item, _ = DTYPES[dt]
        raw = bytearray(data[start + begin:start + end])
        if sys.byteorder != 'little' and item > 1:
            raw = bytearray(b for i in range(0, len(raw), item) for b in reversed(raw[i:i + item]))
        if dt == 'BOOL':  # any nonzero byte is true, as qkv reads it
            t = torch.frombuffer(raw, dtype=torch.uint8) != 0 if raw else torch.empty(0, dtype=torch.bool)
        else:
            t = torch.frombuffer(raw, dtype=tdt) if raw else torch.empty(0, dtype=tdt)
        tensors[name] = t.reshape(shape)
        dtypes[name] = dt
    return tensors, metadata, dtypes


def read(path):
    """(tensors, metadata, dtypes) of a file; errors name the file."""
    try:
        with open(path, 'rb') as f:
            data = f.read()
    except OSError as e:
        raise QkvError(f'cannot read {path}: {e.strerror}') from None
    return parse(data, path)


def dumps(tensors, metadata=None):
    """The bytes of a safetensors file: tensors ordered by alignment then name, as the reference writer."""
    plan = []
    for name, t in tensors.items():
        if t.dtype not in TORCH_TO_NAME:
            fail(f'tensor {name!r} has dtype {t.dtype}, which safetensors cannot hold')
        plan.append((name, TORCH_TO_NAME[t.dtype], t.detach().to('cpu').contiguous()))
    plan.sort(key=lambda p: (-DTYPES[p[1]][2], p[0]))
    header = {}
    if metadata is not None:
        header['__metadata__'] = metadata
    chunks, offset = [], 0
    for name, dt, t in plan:
        b = ctypes.string_at(t.data_ptr(), t.numel() * t.element_size()) if t.numel() else b''
        if sys.byteorder != 'little' and DTYPES[dt][1] > 1:
            item = DTYPES[dt][1]
            b = bytes(x for i in range(0, len(b), item) for x in reversed(b[i:i + item]))
        header[name] = {'dtype': dt, 'shape': list(t.shape), 'data_offsets': [offset, offset + len(b)]}
        chunks.append(b)
        offset += len(b)
    raw = json.dumps(header, separators=(',', ':')).encode('utf-8')
    raw += b' ' * ((8 - len(raw) % 8) % 8)
    return len(raw).to_bytes(8, 'little') + raw + b''.join(chunks)


def atomic_write(path, data):
    """Write to a temporary file beside `path`, fsync it, rename it over `path`, fsync the folder,
    as qkv's src/io/atomic.ts (whose comment says what each step is for): a reader never finds half
    a file, and once this returns the new file survives a power cut. The fault points let the crash
    tests kill the process with the temporary file half written (`part`), written but not fsynced
    (`unflushed`), fsynced but not renamed (`flushed`), and renamed before the folder's fsync
    (`renamed`): QKV_FAULT=write:at=<stage>:file=<name>."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    tmp = f'{path}.tmp-{os.getpid()}'
    b = data if isinstance(data, (bytes, bytearray)) else data.encode('utf-8')
    half = len(b) // 2
    with open(tmp, 'wb') as f:
        f.write(b[:half])
        f.flush()
        fault.point('write', file=path, at='part')
        f.write(b[half:])
        if SLOW_WRITES:
            time.sleep(SLOW_WRITES)
        f.flush()
        fault.point('write', file=path, at='unflushed')
        os.fsync(f.fileno())
    fault.point('write', file=path, at='flushed')
    os.replace(tmp, path)
    fault.point('write', file=path, at='renamed')
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write(path, tensors, metadata=None):
    atomic_write(path, dumps(tensors, metadata))
