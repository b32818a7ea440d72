import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readSafetensors, writeSafetensors, type SafetensorsFile } from '../../src/io/safetensors.ts';
import { Tensor } from '../../src/tensor/tensor.ts';

// ---------------------------------------------------------------------------------------------
// helpers
// ---------------------------------------------------------------------------------------------

const enc = new TextEncoder();
const dec = new TextDecoder();

/** Build a file by hand: u64 length prefix, header bytes (string or raw), data bytes. */
function build(header: string | Uint8Array, data: Uint8Array = new Uint8Array(0), lengthOverride?: bigint): Uint8Array {
  const h = typeof header === 'string' ? enc.encode(header) : header;
  const out = new Uint8Array(8 + h.length + data.length);
  new DataView(out.buffer).setBigUint64(0, lengthOverride ?? BigInt(h.length), true);
  out.set(h, 8);
  out.set(data, 8 + h.length);
  return out;
}

function headerLen(file: Uint8Array): number {
  return Number(new DataView(file.buffer, file.byteOffset).getBigUint64(0, true));
}

function headerText(file: Uint8Array): string {
  return dec.decode(file.subarray(8, 8 + headerLen(file)));
}

function dataOf(file: Uint8Array): Uint8Array {
  return file.subarray(8 + headerLen(file));
}

function u16s(bytes: Uint8Array): number[] {
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out: number[] = [];
  for (let i = 0; i + 1 < bytes.length; i += 2) out.push(dv.getUint16(i, true));
  return out;
}

/** Expect a `safetensors:` error whose message contains every needle. */
function throwsWith(fn: () => unknown, ...needles: string[]): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof Error, 'expected an Error');
    assert.ok(e.message.startsWith('safetensors: '), `message should start with 'safetensors: ': ${e.message}`);
    for (const n of needles)
      assert.ok(e.message.includes(n), `message should mention ${JSON.stringify(n)}: ${e.message}`);
    return true;
  });
}

/** A one-tensor header around 4 bytes of data, with the entry given as raw JSON. */
function oneEntry(entryJson: string, data = new Uint8Array(4)): Uint8Array {
  return build(`{"w":${entryJson}}`, data);
}

// ---------------------------------------------------------------------------------------------
// round trips
// ---------------------------------------------------------------------------------------------

test('round trip: float32, int32, bool, scalar and empty tensors with metadata', () => {
  const tensors = {
    'layer.0.weight': new Tensor(new Float32Array([1.5, -2, 0.1, 3e38, -0, 1e-45]), [2, 3], 'float32'),
    ids: new Tensor(new Int32Array([0, -1, 2147483647, -2147483648]), [4], 'int32'),
    mask: new Tensor(new Uint8Array([1, 0, 0, 1]), [2, 2], 'bool'),
    scale: new Tensor(new Float32Array([0.125]), [], 'float32'),
    empty: new Tensor(new Float32Array(0), [0, 3], 'float32'),
    emptyInt: new Tensor(new Int32Array(0), [2, 0], 'int32'),
  } as Record<string, Tensor>;
  // a hostile-looking name must stay an ordinary own key on both sides
  Object.defineProperty(tensors, '__proto__', {
    value: new Tensor(new Float32Array([7]), [1], 'float32'),
    enumerable: true,
  });
  const metadata = { format: 'pt', note: 'ünïcödé "quoted"' };
  const file = writeSafetensors(tensors, { metadata });
  assert.equal((8 + headerLen(file)) % 8, 0);

  const back: SafetensorsFile = readSafetensors(file);
  assert.deepEqual(back.metadata, metadata);
  assert.deepEqual(Object.keys(back.tensors).sort(), Object.keys(tensors).sort());
  for (const [name, t] of Object.entries(tensors)) {
    const r = back.tensors[name];
    assert.equal(r.dtype, t.dtype, name);
    assert.deepEqual([...r.shape], [...t.shape], name);
    assert.deepEqual(Array.from(r.dataSync()), Array.from(t.dataSync()), name);
    assert.equal(r.dataSync().constructor, t.dataSync().constructor, name);
  }
  assert.ok(Object.is(back.tensors['layer.0.weight'].dataSync()[4], -0));
  assert.equal(back.tensors.scale.ndim, 0);
  assert.equal(back.tensors.scale.item(), 0.125);
  assert.deepEqual(
    { ...back.dtypes },
    JSON.parse(
      '{"__proto__":"F32","empty":"F32","emptyInt":"I32","ids":"I32","layer.0.weight":"F32","mask":"BOOL","scale":"F32"}',
    ),
  );
  assert.equal(Object.getPrototypeOf(back.tensors), Object.prototype);
});

test('no metadata given: header has no __metadata__, read gives {}', () => {
  const file = writeSafetensors({ x: new Tensor(new Float32Array([1]), [1], 'float32') });
  assert.ok(!headerText(file).includes('__metadata__'));
  assert.deepEqual(readSafetensors(file).metadata, {});
  // an empty file round-trips too (the reference implementation writes exactly these bytes)
  const empty = writeSafetensors({});
  assert.deepEqual(Array.from(empty), [8, 0, 0, 0, 0, 0, 0, 0, 123, 125, 32, 32, 32, 32, 32, 32]);
  assert.deepEqual(readSafetensors(empty), { tensors: {}, metadata: {}, dtypes: {} });
});

// ---------------------------------------------------------------------------------------------
// F16 / BF16
// ---------------------------------------------------------------------------------------------

test('F16 write: exact encodings (round to nearest even, subnormals, overflow, inf, -0, NaN) and read back', () => {
  const values = [
    1.0, // 0x3C00
    -2.0, // 0xC000
    65504, // 0x7BFF, largest finite
    65519, // rounds down to 65504
    65520, // tie between 65504 (odd) and 65536 -> even = inf
    6.1e-5, // just below the smallest normal 2^-14: subnormal 1023 * 2^-24
    2 ** -14, // smallest normal 0x0400
    2 ** -24, // smallest subnormal 0x0001
    2 ** -25, // exactly half of it: ties to even -> +0
    3 * 2 ** -26, // 0.75 * 2^-24 -> rounds up to 0x0001
    2 ** -26, // below half -> 0
    Infinity, // 0x7C00
    -Infinity, // 0xFC00
    -0, // 0x8000
    0.1, // 0x2E66
    1 + 2 ** -11, // tie: 1.0 (even) 0x3C00
    1 + 3 * 2 ** -11, // tie: up to 0x3C02 (even)
    NaN, // quiet NaN 0x7E00
    1e-3, // 0x1419
  ];
  const expectedBits = [
    0x3c00, 0xc000, 0x7bff, 0x7bff, 0x7c00, 0x03ff, 0x0400, 0x0001, 0x0000, 0x0001, 0x0000, 0x7c00, 0xfc00, 0x8000,
    0x2e66, 0x3c00, 0x3c02, 0x7e00, 0x1419,
  ];
  const t = new Tensor(new Float32Array(values), [values.length], 'float32');
  const file = writeSafetensors({ h: t }, { dtype: 'F16' });
  assert.equal(
    headerText(file).trimEnd(),
    `{"h":{"dtype":"F16","shape":[${values.length}],"data_offsets":[0,${values.length * 2}]}}`,
  );
  assert.deepEqual(u16s(dataOf(file)), expectedBits);

  const back = readSafetensors(file);
  assert.equal(back.dtypes.h, 'F16');
  assert.equal(back.tensors.h.dtype, 'float32');
  const expectedValues = [
    1,
    -2,
    65504,
    65504,
    Infinity,
    1023 * 2 ** -24,
    2 ** -14,
    2 ** -24,
    0,
    2 ** -24,
    0,
    Infinity,
    -Infinity,
    -0,
    0.0999755859375,
    1,
    1 + 2 ** -9,
    NaN,
    0.0010004043579101562,
  ];
  const got = Array.from(back.tensors.h.dataSync());
  assert.equal(got.length, expectedValues.length);
  for (let i = 0; i < got.length; i++)
    assert.ok(Object.is(got[i], expectedValues[i]), `index ${i}: ${got[i]} vs ${expectedValues[i]}`);
});

test('F16 read: every subnormal/special pattern decodes exactly', () => {
  const bits = [0x0001, 0x0200, 0x03ff, 0x8001, 0x7c00, 0xfc00, 0x7c01, 0xfe00, 0x3555, 0xfbff];
  const data = new Uint8Array(bits.length * 2);
  bits.forEach((b, i) => new DataView(data.buffer).setUint16(i * 2, b, true));
  const file = build(`{"x":{"dtype":"F16","shape":[${bits.length}],"data_offsets":[0,${data.length}]}}`, data);
  const got = Array.from(readSafetensors(file).tensors.x.dataSync());
  const want = [
    2 ** -24,
    512 * 2 ** -24,
    1023 * 2 ** -24,
    -(2 ** -24),
    Infinity,
    -Infinity,
    NaN,
    NaN,
    0.333251953125,
    -65504,
  ];
  for (let i = 0; i < want.length; i++) assert.ok(Object.is(got[i], want[i]), `index ${i}: ${got[i]} vs ${want[i]}`);
});

test('BF16 write: exact encodings (RNE) and exact read back', () => {
  const values = [1.0, Math.PI, 1 + 2 ** -8, 1 + 3 * 2 ** -8, -Infinity, 3.4028234663852886e38, -0, NaN, 1e-40];
  // 1+2^-8 ties to 0x3F80 (even), 1+3*2^-8 ties up to 0x3F82, f32 max overflows to inf, 1e-40 is a subnormal
  const expectedBits = [0x3f80, 0x4049, 0x3f80, 0x3f82, 0xff80, 0x7f80, 0x8000, 0x7fc0, 0x0001];
  const file = writeSafetensors({ b: new Tensor(new Float32Array(values), [3, 3], 'float32') }, { dtype: 'BF16' });
  assert.deepEqual(u16s(dataOf(file)), expectedBits);
  const back = readSafetensors(file);
  assert.equal(back.dtypes.b, 'BF16');
  assert.deepEqual([...back.tensors.b.shape], [3, 3]);
  // 0x0001 as bf16 is the float32 bit pattern 0x00010000 = 2^16 * 2^-149 = 2^-133
  const want = [1, 3.140625, 1, 1.015625, -Infinity, Infinity, -0, NaN, 2 ** -133];
  const got = Array.from(back.tensors.b.dataSync());
  for (let i = 0; i < want.length; i++) assert.ok(Object.is(got[i], want[i]), `index ${i}: ${got[i]} vs ${want[i]}`);
});

test('dtype option: string applies to float tensors only; record picks per tensor; I64 and U8 for ints', () => {
  const f = new Tensor(new Float32Array([1, 2]), [2], 'float32');
  const g = new Tensor(new Float32Array([1, 2]), [2], 'float32');
  const i = new Tensor(new Int32Array([-3, 4]), [2], 'int32');
  const m = new Tensor(new Uint8Array([1, 0]), [2], 'bool');
  let back = readSafetensors(writeSafetensors({ f, i, m }, { dtype: 'BF16' }));
  assert.deepEqual({ ...back.dtypes }, { f: 'BF16', i: 'I32', m: 'BOOL' });

  const file = writeSafetensors({ f, g, i, m }, { dtype: { f: 'F16', i: 'I64', m: 'U8' } });
  back = readSafetensors(file);
  assert.deepEqual({ ...back.dtypes }, { f: 'F16', g: 'F32', i: 'I64', m: 'U8' });
  assert.deepEqual(Array.from(back.tensors.i.dataSync()), [-3, 4]);
  assert.equal(back.tensors.m.dtype, 'int32'); // U8 reads back as int32
  assert.deepEqual(Array.from(back.tensors.m.dataSync()), [1, 0]);
  // I64 bytes: two's complement sign extension
  const h = headerText(file);
  const info = JSON.parse(h).i as { data_offsets: [number, number] };
  assert.deepEqual(
    Array.from(dataOf(file).subarray(info.data_offsets[0], info.data_offsets[1])),
    [0xfd, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 4, 0, 0, 0, 0, 0, 0, 0],
  );
});

// ---------------------------------------------------------------------------------------------
// hand-built files
// ---------------------------------------------------------------------------------------------

test('hand-built file: I64, U8, BOOL, F64, I8, I16, U16, U32, F32 with unaligned offsets and padded header', () => {
  const data = new Uint8Array(3 + 16 + 32 + 4 + 3 + 4 + 4 + 8 + 8);
  const dv = new DataView(data.buffer);
  let o = 0;
  data.set([7, 0, 255], o); // u8 [0, 3)
  o += 3;
  dv.setFloat64(o, 0.1, true); // f64 [3, 19): unaligned
  dv.setFloat64(o + 8, -2.5, true);
  o += 16;
  [-1n, 2147483647n, -2147483648n, 5n].forEach((v, k) => dv.setBigInt64(o + 8 * k, v, true)); // i64 [19, 51)
  o += 32;
  data.set([0, 1, 2, 255], o); // bool [51, 55)
  o += 4;
  data.set([0x80, 0x7f, 0xff], o); // i8 [55, 58)
  o += 3;
  dv.setInt16(o, -32768, true); // i16 [58, 62)
  dv.setInt16(o + 2, 1234, true);
  o += 4;
  dv.setUint16(o, 65535, true); // u16 [62, 66)
  dv.setUint16(o + 2, 1, true);
  o += 4;
  dv.setUint32(o, 2147483647, true); // u32 [66, 74)
  dv.setUint32(o + 4, 0, true);
  o += 8;
  dv.setFloat32(o, 1.25, true); // f32 [74, 82): unaligned
  dv.setFloat32(o + 4, -3e-7, true);
  o += 8;
  assert.equal(o, data.length);
  const header =
    '{"b":{"dtype":"U8","shape":[3],"data_offsets":[0,3]},' +
    '"d":{"dtype":"F64","shape":[2],"data_offsets":[3,19]},' +
    '"a":{"dtype":"I64","shape":[2,2],"data_offsets":[19,51]},' +
    '"m":{"dtype":"BOOL","shape":[4],"data_offsets":[51,55]},' +
    '"i8":{"dtype":"I8","shape":[3],"data_offsets":[55,58]},' +
    '"i16":{"dtype":"I16","shape":[2],"data_offsets":[58,62]},' +
    '"u16":{"dtype":"U16","shape":[2],"data_offsets":[62,66]},' +
    '"u32":{"dtype":"U32","shape":[2],"data_offsets":[66,74]},' +
    '"f":{"dtype":"F32","shape":[1,2],"data_offsets":[74,82]},' +
    '"__metadata__":{"source":"hand"}}   ';
  // Also place the whole file at an odd byte offset inside a larger buffer.
  const inner = build(header, data);
  const host = new Uint8Array(inner.length + 1);
  host.set(inner, 1);
  const r = readSafetensors(host.subarray(1));

  assert.deepEqual(r.metadata, { source: 'hand' });
  assert.deepEqual(
    { ...r.dtypes },
    { b: 'U8', d: 'F64', a: 'I64', m: 'BOOL', i8: 'I8', i16: 'I16', u16: 'U16', u32: 'U32', f: 'F32' },
  );
  const exp: Record<string, [string, number[], number[]]> = {
    b: ['int32', [3], [7, 0, 255]],
    d: ['float32', [2], [Math.fround(0.1), -2.5]],
    a: ['int32', [2, 2], [-1, 2147483647, -2147483648, 5]],
    m: ['bool', [4], [0, 1, 1, 1]],
    i8: ['int32', [3], [-128, 127, -1]],
    i16: ['int32', [2], [-32768, 1234]],
    u16: ['int32', [2], [65535, 1]],
    u32: ['int32', [2], [2147483647, 0]],
    f: ['float32', [1, 2], [1.25, Math.fround(-3e-7)]],
  };
  for (const [name, [dtype, shape, values]] of Object.entries(exp)) {
    const t = r.tensors[name];
    assert.equal(t.dtype, dtype, name);
    assert.deepEqual([...t.shape], shape, name);
    assert.deepEqual(Array.from(t.dataSync()), values, name);
  }
});

test('hand-built file: scalar and zero-size entries, empty spans may share an offset', () => {
  const data = new Uint8Array(4);
  new DataView(data.buffer).setInt32(0, -42, true);
  const file = build(
    '{"s":{"dtype":"I32","shape":[],"data_offsets":[0,4]},"e":{"dtype":"F32","shape":[0],"data_offsets":[4,4]},' +
      '"e2":{"dtype":"F64","shape":[3,0,5],"data_offsets":[2,2]}}',
    data,
  );
  const r = readSafetensors(file);
  assert.deepEqual([...r.tensors.s.shape], []);
  assert.equal(r.tensors.s.item(), -42);
  assert.deepEqual([...r.tensors.e.shape], [0]);
  assert.equal(r.tensors.e.size, 0);
  assert.deepEqual([...r.tensors.e2.shape], [3, 0, 5]);
});

// ---------------------------------------------------------------------------------------------
// exact layout
// ---------------------------------------------------------------------------------------------

test('exact byte layout: matches the reference implementation byte for byte', () => {
  // Vector from the reference implementation's own test: F32 "attn.0" shape [1,2,3] = 0..5.
  const t = new Tensor(new Float32Array([0, 1, 2, 3, 4, 5]), [1, 2, 3], 'float32');
  const out = writeSafetensors({ 'attn.0': t });
  assert.deepEqual(
    Array.from(out),
    [
      64, 0, 0, 0, 0, 0, 0, 0, 123, 34, 97, 116, 116, 110, 46, 48, 34, 58, 123, 34, 100, 116, 121, 112, 101, 34, 58, 34,
      70, 51, 50, 34, 44, 34, 115, 104, 97, 112, 101, 34, 58, 91, 49, 44, 50, 44, 51, 93, 44, 34, 100, 97, 116, 97, 95,
      111, 102, 102, 115, 101, 116, 115, 34, 58, 91, 48, 44, 50, 52, 93, 125, 125, 0, 0, 0, 0, 0, 0, 128, 63, 0, 0, 0,
      64, 0, 0, 64, 64, 0, 0, 128, 64, 0, 0, 160, 64,
    ],
  );
  // Shorter name forces 7 bytes of space padding.
  const out2 = writeSafetensors({ attn0: t.reshape(1, 1, 2, 3) });
  assert.equal(headerLen(out2), 72);
  assert.equal(headerText(out2), '{"attn0":{"dtype":"F32","shape":[1,1,2,3],"data_offsets":[0,24]}}       ');
  // Metadata only.
  const out3 = writeSafetensors({}, { metadata: { framework: 'pt' } });
  assert.equal(headerLen(out3), 40);
  assert.equal(headerText(out3), '{"__metadata__":{"framework":"pt"}}     ');
  assert.equal(out3.length, 48);
});

test('exact byte layout: key order (dtype alignment descending, then name) and 8-byte alignment', () => {
  const file = writeSafetensors(
    {
      z: new Tensor(new Float32Array([1]), [1], 'float32'),
      b: new Tensor(new Uint8Array([1, 0, 1]), [3], 'bool'),
      a: new Tensor(new Float32Array([2, 3]), [2], 'float32'),
      c: new Tensor(new Int32Array([9]), [], 'int32'),
      h: new Tensor(new Float32Array([1]), [1], 'float32'),
    },
    { metadata: { k: 'v' }, dtype: { h: 'F16' } },
  );
  const text =
    '{"__metadata__":{"k":"v"},' +
    '"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},' +
    '"z":{"dtype":"F32","shape":[1],"data_offsets":[8,12]},' +
    '"c":{"dtype":"I32","shape":[],"data_offsets":[12,16]},' +
    '"h":{"dtype":"F16","shape":[1],"data_offsets":[16,18]},' +
    '"b":{"dtype":"BOOL","shape":[3],"data_offsets":[18,21]}}';
  assert.equal(text.length, 298);
  assert.equal(headerLen(file), 304); // 298 rounded up to a multiple of 8 with spaces
  assert.equal(headerText(file), `${text}      `);
  assert.equal(file.length, 8 + 304 + 21);
  assert.deepEqual(Array.from(file.subarray(0, 8)), [0x30, 0x01, 0, 0, 0, 0, 0, 0]);
  assert.deepEqual(
    Array.from(dataOf(file)),
    [0, 0, 0, 64, 0, 0, 64, 64, 0, 0, 128, 63, 9, 0, 0, 0, 0x00, 0x3c, 1, 0, 1],
  );
});

// ---------------------------------------------------------------------------------------------
// validation: one test per error case
// ---------------------------------------------------------------------------------------------

test('error: file shorter than 8 bytes', () => {
  throwsWith(() => readSafetensors(new Uint8Array(5)), 'file is 5 bytes', 'shorter than', '8');
  throwsWith(() => readSafetensors(new Uint8Array(0)), 'file is 0 bytes');
});

test('error: header length larger than the remaining bytes', () => {
  throwsWith(() => readSafetensors(build('{"a":1}', new Uint8Array(3), 100n)), 'header length 100 bytes', '10 bytes');
  throwsWith(() => readSafetensors(build('', new Uint8Array(0), 1n)), 'header length 1 bytes', '0 bytes');
});

test('error: header length unreasonably large (checked before any allocation)', () => {
  throwsWith(() => readSafetensors(build('{}', new Uint8Array(0), 2n ** 60n)), '1152921504606846976', '100000000');
  throwsWith(() => readSafetensors(build('{}', new Uint8Array(0), 2n ** 64n - 1n)), '18446744073709551615');
  throwsWith(() => readSafetensors(build('{}', new Uint8Array(0), 100_000_001n)), '100000001', '100000000-byte limit');
});

test('error: header not valid UTF-8', () => {
  throwsWith(() => readSafetensors(build(new Uint8Array([0x7b, 0xff, 0xfe, 0x7d]))), 'not valid UTF-8', '4 bytes');
});

test('error: header not valid JSON', () => {
  throwsWith(() => readSafetensors(build('{"w": ')), 'not valid JSON');
  throwsWith(() => readSafetensors(build('        ')), 'not valid JSON');
});

test('error: header not a JSON object', () => {
  throwsWith(() => readSafetensors(build('[1,2]')), 'must be a JSON object', 'array [1,2]');
  throwsWith(() => readSafetensors(build('null')), 'must be a JSON object', 'null');
  throwsWith(() => readSafetensors(build('"x"')), 'must be a JSON object', 'string "x"');
});

test('error: entry missing dtype / shape / data_offsets, or not an object', () => {
  throwsWith(() => readSafetensors(oneEntry('{"shape":[1],"data_offsets":[0,4]}')), "tensor 'w'", "missing 'dtype'");
  throwsWith(() => readSafetensors(oneEntry('{"dtype":"F32","data_offsets":[0,4]}')), "tensor 'w'", "missing 'shape'");
  throwsWith(() => readSafetensors(oneEntry('{"dtype":"F32","shape":[1]}')), "tensor 'w'", "missing 'data_offsets'");
  throwsWith(() => readSafetensors(oneEntry('[0,4]')), "tensor 'w' must be an object", 'array [0,4]');
});

test('error: entry with wrong types (dtype, shape dims, data_offsets)', () => {
  const e = (dtype: string, shape: string, offs: string) =>
    readSafetensors(oneEntry(`{"dtype":${dtype},"shape":${shape},"data_offsets":${offs}}`));
  throwsWith(() => e('5', '[1]', '[0,4]'), "tensor 'w' has dtype number 5", 'expected a string');
  throwsWith(() => e('"F32"', '4', '[0,4]'), "tensor 'w' has shape number 4", 'expected an array');
  throwsWith(() => e('"F32"', '[2,-1]', '[0,4]'), "tensor 'w'", 'dimension 1 = number -1', 'non-negative integer');
  throwsWith(() => e('"F32"', '[1.5]', '[0,4]'), "tensor 'w'", 'dimension 0 = number 1.5');
  throwsWith(() => e('"F32"', '["1"]', '[0,4]'), "tensor 'w'", 'dimension 0 = string "1"');
  throwsWith(() => e('"F32"', '[1]', '[0]'), "tensor 'w' has data_offsets array [0]", 'expected [begin, end]');
  throwsWith(() => e('"F32"', '[1]', '[0,4,8]'), "tensor 'w' has data_offsets array [0,4,8]");
  throwsWith(() => e('"F32"', '[1]', '[-4,0]'), "tensor 'w' has data_offsets array [-4,0]");
  throwsWith(() => e('"F32"', '[1]', '[0.5,4]'), "tensor 'w' has data_offsets array [0.5,4]");
  throwsWith(() => e('"F32"', '[1]', '{"0":0,"1":4}'), "tensor 'w' has data_offsets object");
  throwsWith(() => e('"F32"', '[1]', '[4,0]'), "tensor 'w' has data_offsets [4, 0] with begin > end");
});

test('error: unknown dtype', () => {
  throwsWith(
    () => readSafetensors(oneEntry('{"dtype":"F8_E4M3","shape":[4],"data_offsets":[0,4]}')),
    "tensor 'w'",
    'unknown or unsupported dtype "F8_E4M3"',
    'F32',
  );
  throwsWith(() => readSafetensors(oneEntry('{"dtype":"f32","shape":[1],"data_offsets":[0,4]}')), 'dtype "f32"');
});

test('error: data_offsets past the end of the data buffer', () => {
  throwsWith(
    () => readSafetensors(oneEntry('{"dtype":"F32","shape":[10],"data_offsets":[0,40]}')),
    "tensor 'w' has data_offsets [0, 40]",
    'only 4 bytes',
  );
  throwsWith(
    () => readSafetensors(oneEntry('{"dtype":"U8","shape":[0],"data_offsets":[9,9]}')),
    "tensor 'w' has data_offsets [9, 9]",
  );
});

test('error: overlapping tensors', () => {
  const file = build(
    '{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},"b":{"dtype":"F32","shape":[4],"data_offsets":[8,24]}}',
    new Uint8Array(24),
  );
  throwsWith(() => readSafetensors(file), "'a' (data_offsets [0, 16])", "'b' (data_offsets [8, 24])", 'overlap');
  const same = build(
    '{"x":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"y":{"dtype":"I16","shape":[],"data_offsets":[0,2]}}',
    new Uint8Array(2),
  );
  throwsWith(() => readSafetensors(same), "'x'", "'y'", 'overlap');
});

test('error: shape byte size does not equal end - begin', () => {
  const file = oneEntry('{"dtype":"F32","shape":[2,3],"data_offsets":[0,20]}', new Uint8Array(24));
  assert.throws(() => readSafetensors(file), {
    message: "safetensors: tensor 'w' has shape [2, 3] (6 elements of F32 = 24 bytes) but data_offsets span 20 bytes",
  });
  throwsWith(
    () => readSafetensors(oneEntry('{"dtype":"BF16","shape":[],"data_offsets":[0,4]}')),
    "tensor 'w' has shape [] (1 elements of BF16 = 2 bytes) but data_offsets span 4 bytes",
  );
  // huge dims cannot overflow into a false match or allocate
  throwsWith(
    () => readSafetensors(oneEntry('{"dtype":"F64","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,4]}')),
    "tensor 'w' has shape [4294967296, 4294967296, 4294967296] (more than 2^53 elements)",
  );
});

test('error: metadata values that are not strings, or metadata not an object', () => {
  throwsWith(
    () => readSafetensors(build('{"__metadata__":{"format":"pt","n":3}}')),
    "__metadata__ value for key 'n'",
    'number 3',
  );
  throwsWith(() => readSafetensors(build('{"__metadata__":{"x":null}}')), "key 'x'", 'null');
  throwsWith(() => readSafetensors(build('{"__metadata__":["a"]}')), '__metadata__ must be an object', 'array');
});

test('error: I64 / U32 values outside the int32 range name the tensor', () => {
  const d = new Uint8Array(16);
  new DataView(d.buffer).setBigInt64(8, 2n ** 31n, true);
  throwsWith(
    () => readSafetensors(build('{"big":{"dtype":"I64","shape":[2],"data_offsets":[0,16]}}', d)),
    "tensor 'big' (I64) element 1 = 2147483648",
    'int32 range',
  );
  new DataView(d.buffer).setBigInt64(0, -(2n ** 40n), true);
  throwsWith(
    () => readSafetensors(build('{"big":{"dtype":"I64","shape":[2],"data_offsets":[0,16]}}', d)),
    'element 0 = -1099511627776',
  );
  const u = new Uint8Array([0, 0, 0, 0x80]);
  throwsWith(
    () => readSafetensors(build('{"u":{"dtype":"U32","shape":[1],"data_offsets":[0,4]}}', u)),
    "tensor 'u' (U32) element 0 = 2147483648",
  );
});

test('writer errors: non-string metadata, reserved name, incompatible or unknown dtype option, U8 range', () => {
  const f = new Tensor(new Float32Array([1]), [1], 'float32');
  const i = new Tensor(new Int32Array([300]), [1], 'int32');
  throwsWith(
    () => writeSafetensors({ f }, { metadata: { epoch: 3 } as unknown as Record<string, string> }),
    "metadata value for key 'epoch' must be a string",
    'number 3',
  );
  throwsWith(() => writeSafetensors({ __metadata__: f }), "'__metadata__' is reserved");
  throwsWith(
    () => writeSafetensors({ f }, { dtype: { f: 'I64' } }),
    'tensor \'f\' is float32 and cannot be written as "I64"',
  );
  throwsWith(() => writeSafetensors({ i }, { dtype: { i: 'BF16' } }), "tensor 'i' is int32");
  throwsWith(() => writeSafetensors({ f }, { dtype: { g: 'F16' } }), "options.dtype names tensor 'g'");
  throwsWith(() => writeSafetensors({ i }, { dtype: { i: 'U8' } }), "tensor 'i' element 0 = 300 does not fit in U8");
  throwsWith(() => writeSafetensors({ x: [1, 2] as unknown as Tensor }), "value for 'x' is not a Tensor");
});

test('fuzz: corrupted files give a safetensors: error or a valid result, never a crash', () => {
  const base = writeSafetensors(
    {
      a: new Tensor(new Float32Array([1, 2, 3, 4]), [2, 2], 'float32'),
      b: new Tensor(new Int32Array([5, 6]), [2], 'int32'),
      c: new Tensor(new Uint8Array([1]), [1], 'bool'),
    },
    { metadata: { m: 'x' }, dtype: { a: 'F16' } },
  );
  let seed = 12345;
  const rand = () => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return seed / 2 ** 32;
  };
  let ok = 0;
  let errors = 0;
  for (let iter = 0; iter < 3000; iter++) {
    let f: Uint8Array = base.slice();
    const kind = iter % 3;
    if (kind === 0) {
      const n = 1 + Math.floor(rand() * 4);
      for (let k = 0; k < n; k++) f[Math.floor(rand() * f.length)] = Math.floor(rand() * 256);
    } else if (kind === 1) {
      f = f.slice(0, Math.floor(rand() * f.length));
    } else {
      // replace a digit in the header with another digit / a huge number
      const text = dec.decode(f.subarray(8, 8 + headerLen(f)));
      const digits = [...text.matchAll(/\d+/g)];
      const pick = digits[Math.floor(rand() * digits.length)];
      const repl = rand() < 0.5 ? String(Math.floor(rand() * 40)) : `1${'0'.repeat(Math.floor(rand() * 30))}`;
      const newText = text.slice(0, pick.index) + repl + text.slice(pick.index! + pick[0].length);
      f = build(newText, dataOf(base));
    }
    try {
      const r = readSafetensors(f);
      for (const t of Object.values(r.tensors))
        assert.equal(
          t.size,
          t.shape.reduce((p, d) => p * d, 1),
        );
      ok++;
    } catch (e) {
      assert.ok(e instanceof Error && e.message.startsWith('safetensors: '), String(e));
      errors++;
    }
  }
  assert.ok(ok > 0 && errors > 0, `ok=${ok} errors=${errors}`);
});
