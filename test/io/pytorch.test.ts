/**
 * pytorch_model.bin read without running it (src/io/pytorch.ts): every tensor of files torch.save
 * wrote (PyTorch 1.13, scripts/fixtures/make_pytorch_bin.py) equals the values the script dumped,
 * exactly; hostile pickles are refused naming their global; the legacy and compressed formats are
 * refused; hand-made archives and pickles reach every check; and corrupted files (truncated, bytes
 * flipped, zip fields and pickle bytes changed) give an Error naming the file, never a crash, a hang
 * or different data.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { readPytorch } from '../../src/io/pytorch.ts';
import { crc32, readZip } from '../../src/io/zip.ts';
import { MAX_OPCODES, PyDict, PyList, PyTuple, unpickle } from '../../src/io/pickle.ts';
import type { SafetensorsFile } from '../../src/io/safetensors.ts';
import { rng } from '../helpers/random.ts';

const dir = new URL('../fixtures/pytorch/', import.meta.url);
const fixture = (name: string): Uint8Array => new Uint8Array(readFileSync(new URL(name, dir)));
const enc = new TextEncoder();

interface Expected {
  dtype: string;
  shape: number[];
  values: (number | string)[];
}
const EXPECTED: Record<string, Record<string, Expected>> = JSON.parse(
  readFileSync(new URL('expected.json', dir), 'utf8'),
);

const SPECIAL: Record<string, number> = { nan: Number.NaN, inf: Infinity, '-inf': -Infinity };
const TENSOR_DTYPE: Record<string, string> = { F32: 'float32', F16: 'float32', BF16: 'float32', F64: 'float32' };

/** `fn` throws an Error (not a RangeError or TypeError) whose message starts with `start` and contains `has`. */
function throwsWith(fn: () => unknown, start: string, has = ''): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof Error && e.constructor === Error, `expected a plain Error, got ${String(e)}`);
    assert.ok(e.message.startsWith(start), `message ${JSON.stringify(e.message)} does not start with ${start}`);
    assert.ok(e.message.includes(has), `message ${JSON.stringify(e.message)} does not contain ${has}`);
    return true;
  });
}

// ---------------------------------------------------------------------------------------------
// Writing archives and pickles by hand
// ---------------------------------------------------------------------------------------------

/** A zip of stored entries; `zip64` writes every size and offset through the zip64 extra field. */
function storedZip(entries: [string, Uint8Array][], zip64 = false): Uint8Array {
  const parts: Uint8Array[] = [];
  const central: Uint8Array[] = [];
  let offset = 0;
  for (const [name, data] of entries) {
    const nameBytes = enc.encode(name);
    const local = new Uint8Array(30 + nameBytes.length);
    const lv = new DataView(local.buffer);
    lv.setUint32(0, 0x04034b50, true);
    lv.setUint16(4, 20, true);
    lv.setUint32(14, crc32(data), true);
    lv.setUint32(18, data.length, true);
    lv.setUint32(22, data.length, true);
    lv.setUint16(26, nameBytes.length, true);
    local.set(nameBytes, 30);
    const extra = zip64 ? 28 : 0;
    const rec = new Uint8Array(46 + nameBytes.length + extra);
    const cv = new DataView(rec.buffer);
    cv.setUint32(0, 0x02014b50, true);
    cv.setUint16(4, 45, true);
    cv.setUint16(6, 45, true);
    cv.setUint32(16, crc32(data), true);
    cv.setUint32(20, zip64 ? 0xffffffff : data.length, true);
    cv.setUint32(24, zip64 ? 0xffffffff : data.length, true);
    cv.setUint16(28, nameBytes.length, true);
    cv.setUint16(30, extra, true);
    cv.setUint32(42, zip64 ? 0xffffffff : offset, true);
    rec.set(nameBytes, 46);
    if (zip64) {
      const at = 46 + nameBytes.length;
      cv.setUint16(at, 1, true);
      cv.setUint16(at + 2, 24, true);
      cv.setBigUint64(at + 4, BigInt(data.length), true); // size
      cv.setBigUint64(at + 12, BigInt(data.length), true); // compressed size
      cv.setBigUint64(at + 20, BigInt(offset), true); // local header offset
    }
    parts.push(local, data);
    central.push(rec);
    offset += local.length + data.length;
  }
  const cdOffset = offset;
  const cdSize = central.reduce((s, c) => s + c.length, 0);
  const tail = new Uint8Array((zip64 ? 76 : 0) + 22);
  const tv = new DataView(tail.buffer);
  if (zip64) {
    tv.setUint32(0, 0x06064b50, true);
    tv.setBigUint64(4, 44n, true);
    tv.setBigUint64(24, BigInt(entries.length), true);
    tv.setBigUint64(32, BigInt(entries.length), true);
    tv.setBigUint64(40, BigInt(cdSize), true);
    tv.setBigUint64(48, BigInt(cdOffset), true);
    tv.setUint32(56, 0x07064b50, true);
    tv.setBigUint64(64, BigInt(cdOffset + cdSize), true);
    tv.setUint32(72, 1, true);
  }
  const e = zip64 ? 76 : 0;
  tv.setUint32(e, 0x06054b50, true);
  tv.setUint16(e + 8, zip64 ? 0xffff : entries.length, true);
  tv.setUint16(e + 10, zip64 ? 0xffff : entries.length, true);
  tv.setUint32(e + 12, zip64 ? 0xffffffff : cdSize, true);
  tv.setUint32(e + 16, zip64 ? 0xffffffff : cdOffset, true);
  const out = new Uint8Array(cdOffset + cdSize + tail.length);
  let at = 0;
  for (const p of [...parts, ...central, tail]) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** Every entry of a zip, in order (through the reader under test, checked by the fixtures' tests). */
function entriesOf(file: Uint8Array): [string, Uint8Array][] {
  const zip = readZip(file, 'test');
  return [...zip.entries.keys()].map((k) => [k, zip.read(k)]);
}

/** Pickle opcodes, written as torch.save writes them (protocol 2). */
class Pickle {
  readonly bytes: number[] = [0x80, 2];
  op(...b: number[]): this {
    this.bytes.push(...b);
    return this;
  }
  str(s: string): this {
    const b = enc.encode(s);
    return this.op(0x58, b.length & 0xff, (b.length >> 8) & 0xff, 0, 0, ...b);
  }
  int(n: number): this {
    return this.op(0x4a, n & 0xff, (n >> 8) & 0xff, (n >> 16) & 0xff, (n >>> 24) & 0xff);
  }
  global(module: string, name: string): this {
    return this.op(0x63, ...enc.encode(`${module}\n${name}\n`));
  }
  tuple(items: number[]): this {
    this.op(0x28);
    for (const i of items) this.int(i);
    return this.op(0x74);
  }
  done(): Uint8Array {
    return new Uint8Array(this.op(0x2e).bytes);
  }
}

interface Spec {
  name: string;
  type?: string;
  key?: string;
  numel: number;
  offset?: number;
  shape: number[];
  stride: number[];
}

/** data.pkl of a state dict of `specs` (one _rebuild_tensor_v2 call each). */
function statePickle(specs: Spec[]): Uint8Array {
  const p = new Pickle().op(0x7d, 0x28);
  for (const s of specs) {
    p.str(s.name).global('torch._utils', '_rebuild_tensor_v2').op(0x28, 0x28);
    p.str('storage')
      .global('torch', s.type ?? 'FloatStorage')
      .str(s.key ?? '0')
      .str('cpu')
      .int(s.numel)
      .op(0x74, 0x51);
    p.int(s.offset ?? 0)
      .tuple(s.shape)
      .tuple(s.stride);
    p.op(0x89).global('collections', 'OrderedDict').op(0x29, 0x52, 0x74, 0x52);
  }
  return p.op(0x75).done();
}

/** An archive of data.pkl and storages (name to bytes), as torch lays it out (without alignment). */
function archive(pkl: Uint8Array, storages: Record<string, Uint8Array> = {}, more: [string, Uint8Array][] = []) {
  const entries: [string, Uint8Array][] = [['archive/data.pkl', pkl]];
  for (const [k, v] of Object.entries(storages)) entries.push([`archive/data/${k}`, v]);
  entries.push(['archive/version', enc.encode('3\n')], ...more);
  return storedZip(entries);
}

const f32 = (...v: number[]): Uint8Array => new Uint8Array(new Float32Array(v).buffer);
const i64 = (...v: bigint[]): Uint8Array => new Uint8Array(new BigInt64Array(v).buffer);

/** Each tensor as [dtype, tensor dtype, shape, values], for exact comparison of two reads. */
function snapshot(r: SafetensorsFile): unknown {
  return Object.entries(r.tensors).map(([k, t]) => [k, r.dtypes[k], t.dtype, [...t.shape], t.toArray()]);
}

// ---------------------------------------------------------------------------------------------
// torch.save's own files
// ---------------------------------------------------------------------------------------------

for (const file of Object.keys(EXPECTED)) {
  test(`${file}: every tensor equals what PyTorch dumped, exactly`, () => {
    const r = readPytorch(fixture(file), file);
    const want = EXPECTED[file];
    assert.deepEqual(Object.keys(r.tensors), Object.keys(want), 'names, in the state dict order');
    assert.deepEqual(r.metadata, {});
    for (const [name, e] of Object.entries(want)) {
      const t = r.tensors[name];
      assert.equal(r.dtypes[name], e.dtype, `${name}: dtype in the file`);
      const tensorDtype = TENSOR_DTYPE[e.dtype] ?? (e.dtype === 'BOOL' ? 'bool' : 'int32');
      assert.equal(t.dtype, tensorDtype, `${name}: dtype read`);
      assert.deepEqual([...t.shape], e.shape, `${name}: shape`);
      // deepStrictEqual compares with Object.is: NaN equals NaN, and -0 differs from 0.
      const values = e.values.map((v) => (typeof v === 'string' ? SPECIAL[v] : v));
      assert.deepStrictEqual(t.toArray(), values, `${name}: values`);
    }
  });
}

test('views.bin: tied names get their own copies; views of one storage are read in row-major order', () => {
  const r = readPytorch(fixture('views.bin'), 'views.bin');
  assert.notEqual(r.tensors.tied_a, r.tensors.tied_b);
  assert.deepEqual(r.tensors.tied_a.toArray(), r.tensors.tied_b.toArray());
  // base = arange(24).reshape(4, 6): the transpose's first row is base's first column.
  assert.deepEqual(r.tensors.transposed.toArray().slice(0, 4), [0, 6, 12, 18]);
  assert.deepEqual(r.tensors.stepped.toArray(), [6, 8, 10, 12, 14, 16, 18, 20, 22]);
  assert.deepEqual(r.tensors.column.toArray(), [3, 9, 15, 21]);
  const m = readPytorch(fixture('module.bin'), 'module.bin');
  assert.deepEqual(m.tensors['out.weight'].toArray(), m.tensors['embed.weight'].toArray());
});

test('files that are not a state dict in the zip format are refused in one line naming the file', () => {
  throwsWith(
    () => readPytorch(fixture('hostile_system.bin'), 'hostile_system.bin'),
    "hostile_system.bin: refusing global 'os.system' (only state-dict globals are allowed: collections.OrderedDict, ",
  );
  throwsWith(
    () => readPytorch(fixture('hostile_eval.bin')),
    "pytorch_model.bin: refusing global 'builtins.eval' (only state-dict globals are allowed: ",
    'torch._utils._rebuild_tensor_v2',
  );
  throwsWith(() => readPytorch(fixture('legacy.bin'), 'legacy.bin'), "legacy.bin: torch.save's legacy format");
  throwsWith(
    () => readPytorch(fixture('compressed.bin'), 'compressed.bin'),
    "compressed.bin: entry 'module/",
    'is compressed (deflate); only stored (uncompressed) entries are read',
  );
  throwsWith(
    () => readPytorch(fixture('int64_overflow.bin'), 'x.bin'),
    "x.bin: 'big' (int64) element 1 = 1099511627776 is outside the int32 range",
  );
  throwsWith(
    () => readPytorch(fixture('nested.bin'), 'x.bin'),
    "x.bin: nested/data.pkl: 'model' holds dict of 6, not a tensor",
    "torch.save(ckpt['model'], path)",
  );
  throwsWith(() => readPytorch(enc.encode('{"not": "a zip"}'), 'x.bin'), 'x.bin: not a zip archive');
  throwsWith(() => readPytorch('x' as unknown as Uint8Array, 'x.bin'), 'x.bin: expected the file', 'str "x"');
});

// ---------------------------------------------------------------------------------------------
// Hand-made archives and pickles
// ---------------------------------------------------------------------------------------------

test('zip: CRC-32 is zip’s, and zip64 records are read like plain ones', () => {
  assert.equal(crc32(enc.encode('123456789')), 0xcbf43926);
  assert.equal(crc32(new Uint8Array(0)), 0);
  const bytes = fixture('module.bin');
  const again = storedZip(entriesOf(bytes), true);
  assert.deepStrictEqual(snapshot(readPytorch(again)), snapshot(readPytorch(bytes)));
  assert.deepStrictEqual(snapshot(readPytorch(storedZip(entriesOf(bytes)))), snapshot(readPytorch(bytes)));
});

test('hand-made state dicts: strides, offsets and dtypes as _rebuild_tensor_v2 gives them', () => {
  const data = f32(0, 1, 2, 3, 4, 5);
  const read = (specs: Spec[], storages: Record<string, Uint8Array> = { 0: data }) =>
    readPytorch(archive(statePickle(specs), storages), 'x.bin');
  const r = read([
    { name: 'a', numel: 6, shape: [2, 3], stride: [3, 1] },
    { name: 't', numel: 6, shape: [3, 2], stride: [1, 3] },
    { name: 'o', numel: 6, offset: 4, shape: [2], stride: [1] },
    { name: 'e', numel: 6, offset: 6, shape: [0, 5], stride: [5, 1] },
  ]);
  assert.deepEqual(r.tensors.a.toArray(), [0, 1, 2, 3, 4, 5]);
  assert.deepEqual(r.tensors.t.toArray(), [0, 3, 1, 4, 2, 5]);
  assert.deepEqual(r.tensors.o.toArray(), [4, 5]);
  assert.deepEqual([...r.tensors.e.shape], [0, 5]);
  const longs = { 0: i64(-(2n ** 31n), 2n ** 31n - 1n, 2n ** 31n, 5n) };
  const l = read([{ name: 'l', type: 'LongStorage', numel: 4, shape: [2], stride: [1] }], longs);
  assert.deepEqual(l.tensors.l.toArray(), [-(2 ** 31), 2 ** 31 - 1]);
  throwsWith(
    () => read([{ name: 'l', type: 'LongStorage', numel: 4, shape: [2, 2], stride: [1, 2] }], longs),
    "x.bin: 'l' (int64) element 1 = 2147483648 is outside the int32 range", // the view's row-major order
  );

  const bad: [Spec[], Record<string, Uint8Array>, string][] = [
    [[{ name: 'a', numel: 6, offset: 1, shape: [2, 3], stride: [3, 1] }], { 0: data }, 'reaches element 6 of storage'],
    [[{ name: 'a', numel: 6, offset: 7, shape: [0], stride: [1] }], { 0: data }, 'offset 7 is past storage'],
    [[{ name: 'a', numel: 6, shape: [8], stride: [0] }], { 0: data }, 'overlapping views are not read'],
    [[{ name: 'a', numel: 6, shape: [2], stride: [3, 1] }], { 0: data }, 'size has 1 dimensions and stride 2'],
    [
      [{ name: 'a', numel: 7, shape: [2], stride: [1] }],
      { 0: data },
      'expected 7 × F32 = 28 bytes, the entry holds 24',
    ],
    [[{ name: 'a', numel: 6, shape: [2], stride: [1] }], {}, "storage '0' has no entry archive/data/0"],
    [
      [
        { name: 'a', numel: 6, shape: [2], stride: [1] },
        { name: 'b', type: 'IntStorage', numel: 6, shape: [2], stride: [1] },
      ],
      { 0: data },
      "storage '0' is named as 6 × I32 and earlier as 6 × F32",
    ],
    [
      [{ name: 'a', numel: 2 ** 26, shape: [2 ** 26], stride: [1] }],
      { 0: data },
      `expected 67108864 × F32 = 268435456 bytes`,
    ],
    [
      [{ name: 'a', type: 'ComplexFloatStorage', numel: 6, shape: [2], stride: [1] }],
      {},
      "'torch.ComplexFloatStorage'",
    ],
  ];
  for (const [specs, storages, message] of bad) throwsWith(() => read(specs, storages), 'x.bin: ', message);

  // A file naming one storage many times cannot decode to a huge size.
  const many = Array.from({ length: 200 }, (_, i) => ({ name: `w${i}`, numel: 4096, shape: [4096], stride: [1] }));
  throwsWith(() => read(many, { 0: f32(...new Array(4096).fill(1)) }), 'x.bin: ', '16× the file');
});

test('hand-made archives: data.pkl, byteorder and version are checked', () => {
  const pkl = statePickle([{ name: 'a', numel: 1, shape: [], stride: [] }]);
  const one = { 0: f32(7) };
  assert.deepEqual(
    readPytorch(archive(pkl, one, [['archive/byteorder', enc.encode('little')]])).tensors.a.toArray(),
    [7],
  );
  const cases: [Uint8Array, string][] = [
    [archive(pkl, one, [['archive/byteorder', enc.encode('big')]]), 'archive/byteorder is "big": only \'little\''],
    [
      archive(pkl, one, [['other/data.pkl', pkl]]),
      'expected one <name>/data.pkl entry (a torch.save archive), found 2',
    ],
    [storedZip([['data.pkl', pkl]]), "found 0 among 1 entries ('data.pkl')"],
    [storedZip([]), 'found 0 among 0 entries'],
    [
      storedZip([
        ['archive/data.pkl', pkl],
        ['archive/version', enc.encode('three')],
      ]),
      'archive/version is "three"',
    ],
    [
      storedZip([
        ['a/data.pkl', pkl],
        ['a/data.pkl', pkl],
      ]),
      "entry 'a/data.pkl' appears twice",
    ],
  ];
  for (const [bytes, message] of cases) throwsWith(() => readPytorch(bytes, 'x.bin'), 'x.bin: ', message);
});

test('hand-made pickles: unknown and unread opcodes, calls and shapes a state dict has not are refused', () => {
  const P = (...b: number[]) => new Uint8Array([0x80, 2, ...b]);
  const storage = [...enc.encode('ctorch\nFloatStorage\n')];
  const cases: [Uint8Array, string][] = [
    [P(0xff), 'archive/data.pkl: opcode 0xff at byte 2: not a pickle opcode'],
    [P(0x69, ...enc.encode('os\nsystem\n')), 'archive/data.pkl: INST at byte 2: this opcode is not read'],
    [P(0x81), 'NEWOBJ at byte 2: this opcode is not read'],
    [new Uint8Array([0x80, 9, 0x2e]), 'PROTO at byte 0: protocol 9: only protocols 2 to 5 are read'],
    [P(...storage, 0x29, 0x52, 0x2e), "REDUCE at byte 23: 'torch.FloatStorage' is allowed as a value, not as a call"],
    [P(0x7d), 'STOP at byte 3: the pickle ends without a STOP'],
    [P(0x7d, 0x2e, 0x2e), 'STOP at byte 3: 1 bytes follow the STOP'],
    [P(0x7d, 0x7d, 0x2e), 'STOP at byte 4: expected one value on the stack and no MARK, got 2 values'],
    [P(0x73), 'SETITEM at byte 2: the stack is empty'],
    [P(0x68, 5), 'BINGET at byte 2: memo 5 was never stored'],
    [P(0x58, 0xff, 0xff, 0xff, 0x7f), 'BINUNICODE at byte 2: needs 2147483647 more bytes'],
    [P(0x8c, 2, 0xc3, 0x28), 'its 2-byte string is not UTF-8'],
    [P(0x63, ...enc.encode('os')), 'GLOBAL at byte 2: expected a newline-terminated name'],
    [P(0x5d, 0x7d, 0x62, 0x2e), "BUILD at byte 4: only a dict's state (a dict) is built"],
    [P(0x74), 'TUPLE at byte 2: no MARK before it'],
    [P(0x5d, 0x4b, 1, 0x73), 'SETITEM at byte 5: a dict key must be a str, int, float, bool or None, got list of 0'],
    [P(0x4b, 1, 0x4b, 1, 0x61), 'APPEND at byte 6: expected a list to append to, got int 1'],
    [P(0x5d, 0x28, 0x4b, 1, 0x61), 'APPEND at byte 6: expected a list to append to, got nothing'], // below a MARK
    [P(0x7d, 0x28, 0x5d, 0x4b, 1, 0x75), 'SETITEMS at byte 7: a dict key must be a str, int, float, bool or None'],
    [P(0x8a, 20, ...new Array(20).fill(0)), 'LONG1 at byte 2: a 20-byte integer is wider than the 16 bytes'],
    [P(0x4b, 1, 0x51), "archive/data.pkl: persistent id int 1, expected ('storage', storage type, key, location"],
    [P(0x5d, 0x2e), 'archive/data.pkl holds list of 0, expected a state dict'],
    [P(0x7d, 0x4b, 1, 0x4b, 2, 0x73, 0x2e), 'archive/data.pkl: state dict key int 1, expected str keys'],
    [P(0x7d, 0x58, 1, 0, 0, 0, 0x61, 0x88, 0x73, 0x2e), "archive/data.pkl: 'a' holds bool True, not a tensor"],
  ];
  for (const [pkl, message] of cases) throwsWith(() => readPytorch(archive(pkl), 'x.bin'), 'x.bin: ', message);
  // More opcodes than any state dict needs (NONE, POP, over and over) are refused, not kept in memory.
  const long = new Uint8Array([0x80, 2, ...new Array(100).fill([0x4e, 0x30]).flat(), 0x7d, 0x2e]);
  const options = { label: 'x.bin', entry: 'p.pkl', globals: {} };
  assert.ok(unpickle(long, { ...options, maxOpcodes: 203 }) instanceof PyDict);
  throwsWith(() => unpickle(long, { ...options, maxOpcodes: 202 }), 'x.bin: p.pkl: ', 'more than 202 opcodes');
  assert.equal(MAX_OPCODES, 5_000_000);
});

/** Python's own pickle.dumps (3.11) of plain data, protocols 2 and 4 (d: b'xy' in the second only). */
const PY_PICKLES = [
  '80027d71002858010000006171015d7102284b014afbffffff4d2c014a701101008a0500000080008a0900000000000000004' +
    '08a090000000000000000c0473ff80000000000004780000000000000004e88895802000000c3a971034b018571044b014b02' +
    '8671054b014b024b0387710629284b044b054b064b077471076558010000006271087d7109284b01580100000078710a4e4740' +
    '0400000000000075580100000063710b6802752e',
  '80049598000000000000007d94288c0161945d94284b014afbffffff4d2c014a701101008a0500000080008a0900000000000' +
    '00000408a090000000000000000c0473ff80000000000004780000000000000004e88898c02c3a9944b0185944b014b028694' +
    '4b014b024b03879429284b044b054b064b077494658c0162947d94284b018c0178944e474004000000000000758c01639468' +
    '028c0164944302787994752e',
];

test('unpickle: plain data pickled by Python reads back as the same values, shared objects shared', () => {
  const plain = (v: unknown): unknown =>
    v instanceof PyDict
      ? { dict: [...v.map].map(([k, x]) => [k, plain(x)]) }
      : v instanceof PyList
        ? { list: v.items.map(plain) }
        : v instanceof PyTuple
          ? { tuple: v.items.map(plain) }
          : v;
  const a = [1, -5, 300, 70000, 2 ** 31, 2n ** 70n, -(2n ** 70n), 1.5, -0, null, true, false, 'é'];
  const tuples = [[1], [1, 2], [1, 2, 3], [], [4, 5, 6, 7]].map((t) => ({ tuple: t }));
  const list = { list: [...a, ...tuples] };
  const b = {
    dict: [
      [1, 'x'],
      [null, 2.5],
    ],
  };
  for (const [i, hex] of PY_PICKLES.entries()) {
    const bytes = new Uint8Array(hex.match(/../g)!.map((h) => Number.parseInt(h, 16)));
    const v = unpickle(bytes, { label: 'p', entry: 'p.pkl', globals: {} });
    const entries: unknown[] = [
      ['a', list],
      ['b', b],
      ['c', list],
    ];
    if (i === 1) entries.push(['d', new Uint8Array([0x78, 0x79])]);
    assert.deepStrictEqual(plain(v), { dict: entries }, `protocol ${i === 0 ? 2 : 4}`);
    assert.equal((v as PyDict).map.get('c'), (v as PyDict).map.get('a'), 'BINGET gives the object itself');
  }
});

// ---------------------------------------------------------------------------------------------
// Fuzz
// ---------------------------------------------------------------------------------------------

/** Reads `bytes`: an Error naming the file, or a result whose every tensor is whole. */
function readOrError(bytes: Uint8Array): SafetensorsFile | null {
  try {
    const r = readPytorch(bytes, 'f.bin');
    for (const t of Object.values(r.tensors)) {
      assert.equal(
        t.size,
        t.shape.reduce((p, d) => p * d, 1),
      );
    }
    return r;
  } catch (e) {
    assert.ok(e instanceof Error && e.constructor === Error, `expected a plain Error, got ${String(e)}`);
    assert.ok(e.message.startsWith('f.bin: '), e.message);
    return null;
  }
}

test('fuzz: truncated at every length, an Error naming the file', () => {
  for (const name of ['module.bin', 'views.bin']) {
    const bytes = fixture(name);
    for (let n = 0; n < bytes.length; n++) assert.equal(readOrError(bytes.subarray(0, n)), null, `${name}[0, ${n})`);
  }
});

test('fuzz: flipped bytes and changed zip fields give an Error or the same tensors, never others', () => {
  const rand = rng(46);
  for (const name of ['module.bin', 'dtypes.bin', 'views.bin']) {
    const base = fixture(name);
    const want = snapshot(readPytorch(base, 'f.bin'));
    // Where the zip's offsets and sizes live: the central directory and the end records.
    const fields: [number, number][] = []; // [offset, width]
    const dv = new DataView(base.buffer, base.byteOffset, base.byteLength);
    for (let at = 0; at + 4 <= base.length; at++) {
      const sig = dv.getUint32(at, true);
      if (sig === 0x02014b50) fields.push([at + 20, 4], [at + 24, 4], [at + 28, 2], [at + 30, 2], [at + 42, 4]);
      if (sig === 0x04034b50) fields.push([at + 26, 2], [at + 28, 2]);
      if (sig === 0x06064b50) fields.push([at + 32, 4], [at + 40, 4], [at + 48, 4]);
      if (sig === 0x07064b50) fields.push([at + 8, 4]);
      if (sig === 0x06054b50) fields.push([at + 10, 2], [at + 12, 4], [at + 16, 4], [at + 20, 2]);
    }
    let ok = 0;
    let errors = 0;
    for (let iter = 0; iter < 1500; iter++) {
      const f = base.slice();
      if (iter % 2 === 0) {
        const n = 1 + Math.floor(rand() * 4);
        for (let k = 0; k < n; k++) f[Math.floor(rand() * f.length)] ^= 1 + Math.floor(rand() * 255);
      } else {
        const [at, width] = fields[Math.floor(rand() * fields.length)];
        const v = [0, 1, 0xffff, 0xffffffff, Math.floor(rand() * base.length * 2)][Math.floor(rand() * 5)];
        if (width === 4) new DataView(f.buffer).setUint32(at, v >>> 0, true);
        else new DataView(f.buffer).setUint16(at, v & 0xffff, true);
      }
      const r = readOrError(f);
      if (r === null) errors++;
      else {
        assert.deepStrictEqual(snapshot(r), want, `${name}, iteration ${iter}: read different tensors`);
        ok++;
      }
    }
    assert.ok(errors > 500, `${name}: ok=${ok} errors=${errors}`);
  }
});

test('fuzz: changed pickle bytes (with a valid CRC) give an Error or whole tensors', () => {
  const rand = rng(1);
  for (const name of ['module.bin', 'views.bin', 'dtypes.bin']) {
    const entries = entriesOf(fixture(name));
    const i = entries.findIndex(([k]) => k.endsWith('/data.pkl'));
    const pkl = entries[i][1];
    let ok = 0;
    let errors = 0;
    for (let iter = 0; iter < 1500; iter++) {
      let p = pkl.slice();
      const kind = iter % 3;
      if (kind === 0) {
        const n = 1 + Math.floor(rand() * 3);
        for (let k = 0; k < n; k++) p[Math.floor(rand() * p.length)] = Math.floor(rand() * 256);
      } else if (kind === 1) {
        p = p.slice(0, Math.floor(rand() * p.length));
      } else {
        // An integer argument (BININT1/BININT2/BININT) set to a small, huge or negative value.
        const ints = [...p.keys()].filter((j) => p[j] === 0x4b || p[j] === 0x4a);
        const at = ints[Math.floor(rand() * ints.length)];
        const v = [0, 1, 2, 255, 0x7fffffff, -1][Math.floor(rand() * 6)];
        if (p[at] === 0x4b) p[at + 1] = v & 0xff;
        else new DataView(p.buffer).setInt32(at + 1, v, true);
      }
      const copy = entries.slice();
      copy[i] = [entries[i][0], p];
      if (readOrError(storedZip(copy)) === null) errors++;
      else ok++;
    }
    assert.ok(ok > 0 && errors > 0, `${name}: ok=${ok} errors=${errors}`);
  }
});
