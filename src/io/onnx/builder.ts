/**
 * A small ONNX graph builder: named values, nodes in topological order (the order they are added),
 * weights as initializers, and serialisation through `onnx-proto` (ONNX's own .proto compiled with
 * protobufjs). It knows only ONNX; the model graphs are written with it in seq2seq.ts and gpt.ts.
 *
 * Weights: fp32 initializers, or fp16 ones each followed by a Cast to fp32, so every computation
 * stays fp32 (ONNX Runtime folds the Casts once when it loads the graph).
 */
import onnxProto from 'onnx-proto';

const { onnx } = onnxProto;
const DT = onnx.TensorProto.DataType;

/** The opset every graph declares (LayerNormalization is opset 17). */
export const OPSET = 17;
/** IR version 8: what ONNX 1.10+ checkers and every ONNX Runtime since 1.10 read. */
export const IR_VERSION = 8;

export type ElemType = 'float32' | 'int64' | 'bool';
export type WeightDType = 'fp32' | 'fp16';
/** A dimension: a size, or the name of a dynamic axis ('batch', 'sequence', ...). */
export type Dim = number | string;

const ELEM: Record<ElemType, number> = { float32: DT.FLOAT, int64: DT.INT64, bool: DT.BOOL };

type AttrValue = number | number[] | string | { float: number };

/** float32 → IEEE half bits, round to nearest even (what safetensors' fp16 writer and numpy do). */
export function toHalfBits(x: number): number {
  const f = new Float32Array([x]);
  const u = new Uint32Array(f.buffer)[0];
  const sign = (u >>> 16) & 0x8000;
  const exp = (u >>> 23) & 0xff;
  let mant = u & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0); // inf / nan
  const e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00; // overflow → inf
  if (e <= 0) {
    if (e < -10) return sign; // underflow → ±0
    mant |= 0x800000;
    const shift = 14 - e;
    let half = mant >>> shift;
    const rem = mant & ((1 << shift) - 1);
    const mid = 1 << (shift - 1);
    if (rem > mid || (rem === mid && (half & 1))) half++;
    return sign | half;
  }
  let half = (e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && (half & 1))) half++;
  return sign | half;
}

export class GraphBuilder {
  private readonly nodes: InstanceType<typeof onnx.NodeProto>[] = [];
  private readonly initializers: InstanceType<typeof onnx.TensorProto>[] = [];
  private readonly inputs: InstanceType<typeof onnx.ValueInfoProto>[] = [];
  private readonly outputs: InstanceType<typeof onnx.ValueInfoProto>[] = [];
  private readonly names = new Set<string>();
  private readonly consts = new Map<string, string>();
  private counter = 0;

  constructor(readonly name: string, readonly weightDType: WeightDType = 'fp32') {}

  /** A fresh value name from a readable stem. */
  fresh(stem: string): string {
    let n = stem;
    while (this.names.has(n)) n = `${stem}_${++this.counter}`;
    this.names.add(n);
    return n;
  }

  input(name: string, type: ElemType, dims: Dim[]): string {
    this.inputs.push(valueInfo(name, type, dims));
    this.names.add(name);
    return name;
  }

  /** Declare `value` a graph output named `name` (an Identity when the names differ). */
  output(name: string, value: string, type: ElemType, dims: Dim[]): void {
    if (value !== name) {
      this.names.add(name);
      this.nodes.push(onnx.NodeProto.create({ opType: 'Identity', input: [value], output: [name], name: `${name}_out` }));
    }
    this.outputs.push(valueInfo(name, type, dims));
  }

  /** A weight tensor (fp32 values) under its state-dict name; fp16 graphs store it half and Cast it. */
  weight(name: string, data: Float32Array, dims: number[]): string {
    if (this.weightDType === 'fp32') {
      this.initializers.push(onnx.TensorProto.create({ name, dataType: DT.FLOAT, dims, rawData: bytesOf(data) }));
      this.names.add(name);
      return name;
    }
    const half = new Uint16Array(data.length);
    for (let i = 0; i < data.length; i++) half[i] = toHalfBits(data[i]);
    const stored = `${name}.fp16`;
    this.initializers.push(onnx.TensorProto.create({ name: stored, dataType: DT.FLOAT16, dims, rawData: bytesOf(half) }));
    this.names.add(stored);
    this.names.add(name);
    this.nodes.push(onnx.NodeProto.create({ opType: 'Cast', input: [stored], output: [name], name: `${name}_cast`, attribute: [attr('to', DT.FLOAT)] }));
    return name;
  }

  /** A fixed fp32 table that is no weight (the sinusoids): kept fp32 in every export, as qkv keeps it. */
  table(name: string, data: Float32Array, dims: number[]): string {
    this.initializers.push(onnx.TensorProto.create({ name, dataType: DT.FLOAT, dims, rawData: bytesOf(data) }));
    this.names.add(name);
    return name;
  }

  /** A constant (always fp32 or int64, never cast): shapes, axes, scalars. Shared by value. */
  constInt(values: number[], scalar = false): string {
    const key = `i${scalar ? 's' : ''}:${values.join(',')}`;
    let n = this.consts.get(key);
    if (!n) {
      n = this.fresh(scalar ? `const_${values[0]}` : `const_[${values.join(',')}]`);
      const data = BigInt64Array.from(values.map((v) => BigInt(v)));
      this.initializers.push(onnx.TensorProto.create({ name: n, dataType: DT.INT64, dims: scalar ? [] : [values.length], rawData: bytesOf(data) }));
      this.consts.set(key, n);
    }
    return n;
  }

  constFloat(value: number): string {
    const key = `f:${Object.is(value, -0) ? '-0' : value}`;
    let n = this.consts.get(key);
    if (!n) {
      n = this.fresh(`const_f${Number.isFinite(value) ? value : value > 0 ? 'inf' : '-inf'}`);
      this.initializers.push(onnx.TensorProto.create({ name: n, dataType: DT.FLOAT, dims: [], rawData: bytesOf(new Float32Array([value])) }));
      this.consts.set(key, n);
    }
    return n;
  }

  /** Add a node; returns its output names (fresh names from `out`). */
  node(opType: string, inputs: string[], out: string | string[], attrs: Record<string, AttrValue> = {}): string[] {
    const outputs = (Array.isArray(out) ? out : [out]).map((o) => this.fresh(o));
    this.nodes.push(onnx.NodeProto.create({
      opType, input: inputs, output: outputs, name: `${opType}_${this.nodes.length}`,
      attribute: Object.entries(attrs).map(([k, v]) => attr(k, v)),
    }));
    return outputs;
  }

  /** One-output node. */
  op(opType: string, inputs: string[], out: string, attrs: Record<string, AttrValue> = {}): string {
    return this.node(opType, inputs, out, attrs)[0];
  }

  /** The serialised ModelProto. */
  toBytes(docString = ''): Uint8Array {
    const graph = onnx.GraphProto.create({
      name: this.name, node: this.nodes, initializer: this.initializers, input: this.inputs, output: this.outputs, docString,
    });
    const model = onnx.ModelProto.create({
      irVersion: IR_VERSION, producerName: 'qkv', producerVersion: '0.1.0',
      opsetImport: [onnx.OperatorSetIdProto.create({ domain: '', version: OPSET })], graph,
    });
    return onnx.ModelProto.encode(model).finish();
  }
}

function bytesOf(a: Float32Array | Uint16Array | BigInt64Array): Uint8Array {
  // Raw data is little-endian, as typed arrays are on every platform Node and browsers run on.
  return new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
}

function valueInfo(name: string, type: ElemType, dims: Dim[]): InstanceType<typeof onnx.ValueInfoProto> {
  return onnx.ValueInfoProto.create({
    name,
    type: onnx.TypeProto.create({
      tensorType: onnx.TypeProto.Tensor.create({
        elemType: ELEM[type],
        shape: onnx.TensorShapeProto.create({
          dim: dims.map((d) => onnx.TensorShapeProto.Dimension.create(typeof d === 'number' ? { dimValue: d } : { dimParam: d })),
        }),
      }),
    }),
  });
}

function attr(name: string, v: AttrValue): InstanceType<typeof onnx.AttributeProto> {
  const A = onnx.AttributeProto.AttributeType;
  if (typeof v === 'number') return onnx.AttributeProto.create({ name, type: A.INT, i: v });
  if (typeof v === 'string') return onnx.AttributeProto.create({ name, type: A.STRING, s: new TextEncoder().encode(v) });
  if (Array.isArray(v)) return onnx.AttributeProto.create({ name, type: A.INTS, ints: v });
  return onnx.AttributeProto.create({ name, type: A.FLOAT, f: v.float });
}
