import { record } from '../autograd/engine.ts';
import { broadcastShapes, shapeToString, sizeOf, stridesOf } from '../tensor/shape.ts';
import type { Backend, F16, F32, I8, Q4 } from '../backend/backend.ts';
import { embeddingInt8, embeddingQ4, Q4_BLOCK, quantizeInt8, quantizeQ4 } from '../backend/js/quantized.ts';

export { Q4_BLOCK };
import { capturing, memoryScope } from '../tensor/storage.ts';
import { Tensor } from '../tensor/tensor.ts';
import { halvesToFloat32 } from '../tensor/half.ts';
import { sumToShape } from './reduce.ts';
import { narrow } from './shape.ts';
import { empty, f32, i32, K, onDevice, st, upload, zerosF } from './util.ts';

/**
 * C = A·B for the last two dims, broadcasting the batch dims (torch.matmul for rank >= 2; a 1-D
 * operand is treated as a row or column vector and that dim dropped from the result).
 */
export function matmul(a: Tensor, b: Tensor): Tensor {
  f32(a, 'matmul', 'input');
  f32(b, 'matmul', 'other');
  if (a.ndim === 0 || b.ndim === 0) throw new Error('matmul: both arguments need at least 1 dimension, got a scalar');
  if (a.ndim === 1)
    return matmul(a.reshape(1, a.shape[0]), b).reshape(
      b.ndim === 1 ? [] : [...b.shape.slice(0, -2), b.shape[b.ndim - 1]],
    );
  if (b.ndim === 1) return matmul(a, b.reshape(b.shape[0], 1)).reshape(a.shape.slice(0, -1));
  const m = a.shape[a.ndim - 2];
  const k = a.shape[a.ndim - 1];
  const k2 = b.shape[b.ndim - 2];
  const n = b.shape[b.ndim - 1];
  if (k !== k2) {
    throw new Error(
      `matmul: input shape ${shapeToString(a.shape)} and other shape ` +
        `${shapeToString(b.shape)} cannot be multiplied (${k} != ${k2})`,
    );
  }
  const batchShape = broadcastShapes(a.shape.slice(0, -2), b.shape.slice(0, -2), 'matmul');
  const outShape = [...batchShape, m, n];
  const out = empty(outShape);
  bmm(a, b, out, batchShape, m, n, k, false, false, false);
  return record(out, 'matmul', [a, b], (g) => {
    let da: Tensor | null = null;
    let db: Tensor | null = null;
    if (a.requiresGrad) {
      // dA = dC·Bᵀ over the broadcast batch, then summed down to A's batch shape.
      const full = empty([...batchShape, m, k]);
      bmm(g, b, full, batchShape, m, k, n, false, true, false);
      da = sumToShape(full, a.shape);
    }
    if (b.requiresGrad) {
      // dB = Aᵀ·dC.
      const full = empty([...batchShape, k, n]);
      bmm(a, g, full, batchShape, k, n, m, true, false, false);
      db = sumToShape(full, b.shape);
    }
    return [da, db];
  });
}

/**
 * out[batch] = op(x[batch])·op(y[batch]) where x and y broadcast over batchShape. Uniform strides
 * (the usual case) go to the kernel in one batched call; irregular broadcasts loop over matrices.
 */
function bmm(
  x: Tensor,
  y: Tensor,
  out: Tensor,
  batchShape: number[],
  m: number,
  n: number,
  k: number,
  transX: boolean,
  transY: boolean,
  accumulate: boolean,
): void {
  const batch = sizeOf(batchShape);
  const xm = x.shape[x.ndim - 2] * x.shape[x.ndim - 1];
  const ym = y.shape[y.ndim - 2] * y.shape[y.ndim - 1];
  const xb = sizeOf(x.shape.slice(0, -2));
  const yb = sizeOf(y.shape.slice(0, -2));
  const xd = st(x);
  const yd = st(y);
  const od = st(out);
  const base = { m, n, k, transA: transX, transB: transY, strideC: m * n, accumulate };
  if ((xb === batch || xb === 1) && (yb === batch || yb === 1)) {
    K().gemm(xd, yd, od, { ...base, batch, strideA: xb === 1 ? 0 : xm, strideB: yb === 1 ? 0 : ym });
    return;
  }
  const xs = batchOffsets(x.shape.slice(0, -2), batchShape, xm);
  const ys = batchOffsets(y.shape.slice(0, -2), batchShape, ym);
  for (let i = 0; i < batch; i++) {
    K().gemm(xd, yd, od, {
      ...base,
      batch: 1,
      strideA: 0,
      strideB: 0,
      offsetA: xs[i],
      offsetB: ys[i],
      offsetC: i * m * n,
    });
  }
}

/** Element offset of each broadcast batch index's matrix inside an operand. */
function batchOffsets(shape: number[], batchShape: number[], matSize: number): number[] {
  const st = stridesOf(shape);
  const off = batchShape.length - shape.length;
  const res: number[] = [];
  const total = sizeOf(batchShape);
  const bst = stridesOf(batchShape);
  for (let i = 0; i < total; i++) {
    let o = 0;
    for (let d = 0; d < batchShape.length; d++) {
      const idx = Math.floor(i / bst[d]) % batchShape[d];
      const sd = d - off;
      if (sd >= 0 && shape[sd] !== 1) o += idx * st[sd];
    }
    res.push(o * matSize);
  }
  return res;
}

/**
 * y = x·Wᵀ + b, with W stored (out, in) as torch.nn.Linear keeps it. x may have any leading dims;
 * they are flattened into rows R so the whole op is one GEMM and the bias gradient one reduction.
 */
export function linear(x: Tensor, weight: Tensor, bias?: Tensor | null): Tensor {
  return linearOver(x, weight, bias ?? null, 0, null, 'linear');
}

/**
 * y = x·W[start : start + length]ᵀ + b[start : start + length]: a Linear over rows of a packed weight
 * (out, in) and its bias (out), read in place (the GEMM's offset), where
 * `F.linear(x, F.narrow(W, 0, start, length), F.narrow(b, 0, start, length))` would copy them first:
 * nn.MultiheadAttention's query, key and value projections out of `in_proj_weight` (3E, E). Its
 * gradients are that form's, bit for bit: the weight's and the bias's are zero outside the range.
 */
export function linearRows(x: Tensor, weight: Tensor, bias: Tensor | null, start: number, length: number): Tensor {
  return linearOver(x, weight, bias, start, length, 'linearRows');
}

/** linear over rows [start, start + length) of weight and bias (all rows when `length` is null). */
function linearOver(
  x: Tensor,
  weight: Tensor,
  bias: Tensor | null,
  start: number,
  length: number | null,
  op: string,
): Tensor {
  const k = K();
  const xd = f32(x, op, 'input', k);
  const wd = f32(weight, op, 'weight', k);
  if (weight.ndim !== 2)
    throw new Error(`${op}: weight must be 2-D (out, in), got shape ${shapeToString(weight.shape)}`);
  const [total, inF] = weight.shape;
  if (
    length !== null &&
    (!Number.isInteger(start) || !Number.isInteger(length) || start < 0 || length < 1 || start + length > total)
  ) {
    throw new Error(`${op}: rows [${start}, ${start + length}) are out of bounds for weight of ${total} rows`);
  }
  const outF = length ?? total;
  if (x.ndim < 1 || x.shape[x.ndim - 1] !== inF) {
    throw new Error(
      `${op}: input last dim must be ${inF} (weight shape ` +
        `${shapeToString(weight.shape)}), got input shape ` +
        `${shapeToString(x.shape)}`,
    );
  }
  if (bias && (bias.ndim !== 1 || bias.shape[0] !== total)) {
    throw new Error(`${op}: bias must have shape [${total}], got ${shapeToString(bias.shape)}`);
  }
  const part = outF !== total;
  const offW = start * inF;
  const rows = x.size / inF;
  const outShape = x.shape.slice(0, -1);
  outShape.push(outF);
  const out = empty(outShape, k);
  const od = st(out);
  if (bias) k.copyRows(f32(bias, op, 'bias', k), start, 0, od, 0, outF, rows, outF);
  k.gemm(xd, wd, od, {
    batch: 1,
    m: rows,
    n: outF,
    k: inF,
    transA: false,
    transB: true,
    strideA: 0,
    strideB: 0,
    strideC: 0,
    accumulate: !!bias,
    offsetB: offW,
  });
  const inputs = bias ? [x, weight, bias] : [x, weight];
  return record(out, 'linear', inputs, (g) => {
    const gd = st(g);
    let dx: Tensor | null = null;
    let dw: Tensor | null = null;
    let db: Tensor | null = null;
    if (x.requiresGrad) {
      dx = empty(x.shape); // (R, out)·(out, in)
      K().gemm(gd, wd, st(dx), {
        batch: 1,
        m: rows,
        n: inF,
        k: outF,
        transA: false,
        transB: false,
        strideA: 0,
        strideB: 0,
        strideC: 0,
        accumulate: false,
        offsetB: offW,
      });
    }
    if (weight.requiresGrad) {
      // (R, out)ᵀ·(R, in), into the rows of the range (a part's gradient is zero elsewhere).
      dw = part ? zerosF(weight.shape) : empty(weight.shape);
      K().gemm(gd, xd, st(dw), {
        batch: 1,
        m: outF,
        n: inF,
        k: rows,
        transA: true,
        transB: false,
        strideA: 0,
        strideB: 0,
        strideC: 0,
        accumulate: false,
        offsetC: offW,
      });
    }
    if (bias?.requiresGrad) {
      const sum = empty([outF]);
      K().reduceSum(gd, [rows, outF], st(sum), [1, outF]);
      if (part) {
        db = zerosF([total]);
        K().copyRows(st(sum), 0, 0, st(db), start, 0, 1, outF);
      } else db = sum;
    }
    return [dx, dw, db];
  });
}

/** The dtypes a weight can be quantized to (see {@link quantizeWeight}). */
export type QuantDType = 'int8' | 'q4';

/** A quantized weight: a pair of tensors, as docs/design-backends.md describes. */
export interface QuantizedWeight {
  /** int8 or q4 values, (out, in). */
  values: Tensor;
  /**
   * The scales, (out, blocks): float32 (out, 1) for int8 (tensor/quantize.ts's layout); (out, in/32) for q4,
   * float16 (as quantizeWeight makes them; llama.cpp's Q4_0) or float32 (as older qkv wrote q4 files).
   */
  scale: Tensor;
}

/** The storage of a quantized pair's scales: float32, or for q4 values float16 too; else an error naming op. */
function scaleStorage(op: string, values: Tensor, scale: Tensor, k: Backend): F32 | F16 {
  if (values.dtype === 'q4' && scale instanceof Tensor && scale.dtype === 'float16') {
    onDevice(scale, k, op, 'scale');
    return scale.storage as F16;
  }
  if (values.dtype === 'q4' && scale instanceof Tensor && scale.dtype !== 'float32')
    throw new Error(`${op}: scale of q4 values must be float16 or float32, got ${scale.dtype}`);
  return f32(scale, op, 'scale', k);
}

/**
 * A float32 weight (out, in) quantized on the host, as {@link linearQuantized} takes it: `values` int8 with
 * one float32 `scale` per output row (max|row|/127; shape (out, 1)), or q4 (in a multiple of 32) with one
 * float16 scale per block of 32 along `in`, shape (out, in/32) (max|block|/7 rounded to float16, values −7..7
 * against that rounded scale: 4.5 bits a weight, llama.cpp's Q4_0); q = w/scale rounded half to even, as
 * tensor/quantize.ts (`qkv export --dtype int8`) rounds (src/backend/js/quantized.ts). Reads
 * the weight with dataSync (devices that read synchronously). With `empty`, the pair is made zero-filled
 * without reading the weight: for a model whose quantized values are about to be loaded. With `q4Scales`
 * 'float32', q4 scales are held as float32 (the halves widened; the layout of q4 files of older qkv).
 */
export function quantizeWeight(
  weight: Tensor,
  dtype: QuantDType,
  options: { empty?: boolean; q4Scales?: 'float16' | 'float32' } = {},
): QuantizedWeight {
  f32(weight, 'quantizeWeight', 'weight');
  if (weight.ndim !== 2)
    throw new Error(`quantizeWeight: weight must be 2-D (out, in), got shape ${shapeToString(weight.shape)}`);
  const [outF, inF] = weight.shape;
  if (dtype !== 'int8' && dtype !== 'q4') throw new Error(`quantizeWeight: dtype must be 'int8' or 'q4', got ${dtype}`);
  if (dtype === 'q4' && inF % Q4_BLOCK !== 0)
    throw new Error(`quantizeWeight: q4 needs in features a multiple of ${Q4_BLOCK}, got ${inF}`);
  const scaleShape = [outF, dtype === 'int8' ? 1 : inF / Q4_BLOCK];
  const d = weight.device;
  const vs = d.alloc(dtype, outF * inF, { persistent: true });
  const scaleDType = dtype === 'int8' || options.q4Scales === 'float32' ? 'float32' : 'float16';
  const ss = d.alloc(scaleDType, outF * scaleShape[1], { persistent: true });
  if (!options.empty) {
    const w = weight.dataSync() as Float32Array;
    const { q, scale } = dtype === 'int8' ? quantizeInt8(w, outF, inF) : quantizeQ4(w, outF, inF);
    d.write(vs, dtype, q);
    d.write(ss, scaleDType, scale instanceof Uint16Array && scaleDType === 'float32' ? halvesToFloat32(scale) : scale);
  }
  return {
    values: Tensor.fromStorage(d, vs, [outF, inF], dtype),
    scale: Tensor.fromStorage(d, ss, scaleShape, scaleDType),
  };
}

/**
 * y = x·Wᵀ + b with W a quantized pair (see {@link quantizeWeight}): `values` int8 (out, in) with `scale`
 * (out, 1), or q4 (out, in) with `scale` (out, in/32), float16 or float32. x's rows are quantized to int8 on
 * the fly, products summed in int32 (kernels linearInt8, linearQ4). Inference only: it records no gradient.
 */
export function linearQuantized(x: Tensor, values: Tensor, scale: Tensor, bias?: Tensor | null): Tensor {
  const xd = f32(x, 'linearQuantized', 'input');
  const k = K(values);
  if (values.ndim !== 2 || (values.dtype !== 'int8' && values.dtype !== 'q4'))
    throw new Error(
      `linearQuantized: values must be 2-D int8 or q4 (out, in), got ${values.dtype} ${shapeToString(values.shape)}`,
    );
  const sd = scaleStorage('linearQuantized', values, scale, k);
  const [outF, inF] = values.shape;
  const scaleShape = [outF, values.dtype === 'int8' ? 1 : inF / Q4_BLOCK];
  if (shapeToString(scale.shape) !== shapeToString(scaleShape))
    throw new Error(
      `linearQuantized: scale of ${values.dtype} values ${shapeToString(values.shape)} must have shape ` +
        `${shapeToString(scaleShape)}, got ${shapeToString(scale.shape)}`,
    );
  if (x.ndim < 1 || x.shape[x.ndim - 1] !== inF)
    throw new Error(`linearQuantized: input last dim must be ${inF}, got input shape ${shapeToString(x.shape)}`);
  if (bias && (bias.ndim !== 1 || bias.shape[0] !== outF))
    throw new Error(`linearQuantized: bias must have shape [${outF}], got ${shapeToString(bias.shape)}`);
  const bd = bias ? f32(bias, 'linearQuantized', 'bias') : null;
  const rows = x.size / inF;
  const out = empty([...x.shape.slice(0, -1), outF]);
  if (values.dtype === 'int8') k.linearInt8(xd, values.storage as I8, sd as F32, bd, st(out), rows, inF, outF);
  else k.linearQ4(xd, values.storage as Q4, sd, bd, st(out), rows, inF, outF);
  return out;
}

/**
 * y = x·dequant(W)ᵀ + b in float32, W a quantized pair (see {@link quantizeWeight}): the weight-only path a
 * QLoRA step trains through (Dettmers et al. 2023, "QLoRA": the frozen base is stored in 4 or 8 bits and
 * dequantized to the compute dtype for each product). Unlike {@link linearQuantized}, x is not quantized, so the
 * result is F.linear on dequantizeWeight(values, scale) to float32 rounding, and it records a gradient: to x,
 * dX = dY·dequant(W), so adapters below a quantized layer learn, and to the bias where it requires one; none to
 * the quantized values (frozen: they have no float form to update). The float weight lives only while its
 * product runs: it is dequantized on the device (kernels embeddingInt8 / embeddingQ4 over every row) in the
 * forward, freed, and dequantized again in the backward, so a step never holds a float copy of the base.
 */
export function linearDequantized(x: Tensor, values: Tensor, scale: Tensor, bias?: Tensor | null): Tensor {
  checkPair('linearDequantized', values, scale);
  const k = K(values);
  const xd = f32(x, 'linearDequantized', 'input', k);
  const [outF, inF] = values.shape;
  if (x.ndim < 1 || x.shape[x.ndim - 1] !== inF)
    throw new Error(`linearDequantized: input last dim must be ${inF}, got input shape ${shapeToString(x.shape)}`);
  if (bias && (bias.ndim !== 1 || bias.shape[0] !== outF))
    throw new Error(`linearDequantized: bias must have shape [${outF}], got ${shapeToString(bias.shape)}`);
  const bd = bias ? f32(bias, 'linearDequantized', 'bias', k) : null;
  const rows = x.size / inF;
  const gemm = { batch: 1, transA: false, strideA: 0, strideB: 0, strideC: 0 };
  // A scope of its own: the dequantized weight is released when the product is made, the output kept.
  const out = memoryScope(() => {
    const w = dequantizedOnDevice(values, scale, k); // (out, in)
    const y = empty([...x.shape.slice(0, -1), outF], k);
    if (bd) k.copyRows(bd, 0, 0, st(y), 0, outF, rows, outF);
    k.gemm(xd, st(w), st(y), { ...gemm, m: rows, n: outF, k: inF, transB: true, accumulate: !!bd });
    return y;
  });
  const inputs = bias ? [x, bias] : [x];
  return record(out, 'linearDequantized', inputs, (g) => {
    const gd = st(g);
    let dx: Tensor | null = null;
    let db: Tensor | null = null;
    if (x.requiresGrad)
      dx = memoryScope(() => {
        const w = dequantizedOnDevice(values, scale, K()); // (out, in), again: not kept from the forward
        const d = empty(x.shape);
        K().gemm(gd, st(w), st(d), { ...gemm, m: rows, n: inF, k: outF, transB: false, accumulate: false });
        return d; // (R, out)·(out, in)
      });
    if (bias?.requiresGrad) {
      db = empty([outF]);
      K().reduceSum(gd, [rows, outF], st(db), [1, outF]);
    }
    return bias ? [dx, db] : [dx];
  });
}

/** The float32 weight (out, in) of a checked quantized pair, dequantized on its device (q·s, as the table kernels). */
function dequantizedOnDevice(values: Tensor, scale: Tensor, k: Backend): Tensor {
  const [rows, cols] = values.shape;
  const every = upload(
    Int32Array.from({ length: rows }, (_, i) => i),
    [rows],
    k,
  );
  const w = empty([rows, cols], k);
  const sd = scaleStorage('linearDequantized', values, scale, k);
  if (values.dtype === 'int8')
    k.embeddingInt8(values.storage as I8, sd as F32, i32(every, 'linearDequantized', 'ids', k), st(w), cols);
  else k.embeddingQ4(values.storage as Q4, sd, i32(every, 'linearDequantized', 'ids', k), st(w), cols);
  return w;
}

/** The shape of a quantized pair's scales: (out, 1) for int8, (out, in/32) for q4. */
function scaleShapeOf(values: Tensor): number[] {
  return [values.shape[0], values.dtype === 'int8' ? 1 : values.shape[1] / Q4_BLOCK];
}

/**
 * Throws unless `values`/`scale` are a quantized pair (int8 or q4 (rows, cols), scales of its shape: float32,
 * or float16 for q4).
 */
function checkPair(op: string, values: Tensor, scale: Tensor): void {
  if (values.ndim !== 2 || (values.dtype !== 'int8' && values.dtype !== 'q4'))
    throw new Error(`${op}: values must be 2-D int8 or q4, got ${values.dtype} ${shapeToString(values.shape)}`);
  scaleStorage(op, values, scale, K(values));
  if (shapeToString(scale.shape) !== shapeToString(scaleShapeOf(values)))
    throw new Error(
      `${op}: scale of ${values.dtype} values ${shapeToString(values.shape)} must have shape ` +
        `${shapeToString(scaleShapeOf(values))}, got ${shapeToString(scale.shape)}`,
    );
}

/**
 * Rows [start, start + n) of a quantized pair (copies), as a pair: a row keeps its values and scales, so the
 * rows of a quantized weight are the quantized rows of the float one (the q, k or v part of a packed in_proj).
 */
export function quantizedRows(values: Tensor, scale: Tensor, start: number, n: number): QuantizedWeight {
  checkPair('quantizedRows', values, scale);
  const [rows, cols] = values.shape;
  if (!Number.isInteger(start) || !Number.isInteger(n) || start < 0 || n < 1 || start + n > rows)
    throw new Error(`quantizedRows: rows [${start}, ${start + n}) are not within the ${rows} rows of the values`);
  let v: Tensor;
  if (values.dtype === 'int8') v = narrow(values, 0, start, n);
  else {
    // A q4 row is cols/2 whole bytes (cols is a multiple of 32): its rows are the rows of those bytes.
    const bytes = Tensor.fromStorage(values.device, values.storage, [rows, cols / 2], 'uint8');
    v = Tensor.fromStorage(values.device, narrow(bytes, 0, start, n).storage, [n, cols], 'q4');
  }
  return { values: v, scale: narrow(scale, 0, start, n) };
}

/**
 * Rows of a quantized table (an nn.Embedding's int8 or q4 pair, see {@link quantizeWeight}) picked by ids of any
 * shape -> (...ids.shape, dim) float32, each value q·s rounded once to float32: the rows a float table dequantized
 * at load (tensor/quantize.ts) holds, bit for bit (kernels embeddingInt8, embeddingQ4, so the table stays packed
 * on every device). Ids are checked as F.embedding checks them: where they can be read at once. Inference only.
 */
export function embeddingQuantized(ids: Tensor, values: Tensor, scale: Tensor): Tensor {
  checkPair('embeddingQuantized', values, scale);
  if (ids.dtype !== 'int32') throw new Error(`embeddingQuantized: input ids must be int32, got ${ids.dtype}`);
  const k = K(values);
  const sd = scaleStorage('embeddingQuantized', values, scale, k);
  const idd = i32(ids, 'embeddingQuantized', 'input', k);
  const [num, dim] = values.shape;
  if (ids.device.readSync && !capturing()) {
    const id = ids.dataSync<Int32Array>();
    for (let i = 0; i < id.length; i++)
      if (!(id[i] >= 0 && id[i] < num))
        throw new Error(`embeddingQuantized: index ${id[i]} at position ${i} is out of range for ${num} embeddings`);
  }
  const out = empty([...ids.shape, dim], k);
  if (values.dtype === 'int8') k.embeddingInt8(values.storage as I8, sd as F32, idd, st(out), dim);
  else k.embeddingQ4(values.storage as Q4, sd, idd, st(out), dim);
  return out;
}

/**
 * The float32 weight (out, in) of a quantized pair: each value q·s rounded once to float32 (what loading an int8
 * file used to give, tensor/quantize.ts's dequantizeInt8). Read on the host.
 */
export function dequantizeWeight(values: Tensor, scale: Tensor): Tensor {
  checkPair('dequantizeWeight', values, scale);
  const [rows, cols] = values.shape;
  const every = Int32Array.from({ length: rows }, (_, i) => i);
  const out = new Float32Array(rows * cols);
  const s = scale.dataSync<Float32Array | Uint16Array>();
  if (values.dtype === 'int8') embeddingInt8(values.dataSync<Int8Array>(), s as Float32Array, every, out, cols);
  else embeddingQ4(values.dataSync<Uint8Array>(), s, every, out, cols);
  return upload(out, [rows, cols]);
}
