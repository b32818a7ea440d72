/**
 * Weight-only int8 storage: each row of a 2-D float weight (a Linear's output channel, an
 * embedding's token) kept as int8 values times one float32 scale, W[r, c] = q[r, c] · s[r].
 * Symmetric (no zero point): s[r] = max|W[r, :]| / 127 and q = round(W / s), half to even as
 * `torch.round`, so every q is in [-127, 127]. The error per value is at most s[r] / 2, a quarter
 * of a percent of the row's largest magnitude; a row of zeros has s = 0 and comes back zeros.
 *
 * On disk (safetensors) the int8 tensor keeps the weight's name and dtype I8, its scales sit beside
 * it as `NAME_scale`, F32, shape [rows, 1] (the layout of compressed-tensors' per-channel weights,
 * `weight` + `weight_scale`); 1-D tensors (biases, LayerNorm) stay float. The file is about a
 * quarter of fp32 and half of fp16. Loading keeps it as stored where a layer holds quantized weights
 * (models/load-weights.ts: nn.Linear, attention's in_proj, nn.Embedding compute with the quantized
 * kernels); `dequantizeInt8` gives float32 (`q · s`, one correctly rounded float32 product, the same in
 * PyTorch) for readers that want floats.
 */
import { Tensor } from './tensor.ts';
import { shapeToString } from './shape.ts';

/** The scales of weight `NAME` are the tensor `NAME` + this suffix. */
export const SCALE_SUFFIX = '_scale';

/** On-disk dtypes of a quantized state dict, per tensor (the safetensors writer's dtype record). */
export type QuantizedDTypes = Record<string, 'I8' | 'U8' | 'F32' | 'F16'>;

/** Round half to even (torch.round, numpy.rint). */
function rint(x: number): number {
  const r = Math.round(x);
  return r - x === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/**
 * Every float32 2-D tensor of `weights` as int8 values (int32 tensor, written as I8) and its
 * per-row scales (`NAME_scale`, [rows, 1]); other tensors pass through, float ones written as
 * `rest` (F16 by default). Returns the tensors and the dtype record for `writeSafetensors`.
 */
export function quantizeInt8(
  weights: Record<string, Tensor>,
  opts: { rest?: 'F16' | 'F32' } = {},
): {
  /** The int8 weights (as int32 tensors), their `NAME_scale` tensors, and the other tensors. */
  tensors: Record<string, Tensor>;
  /** The on-disk dtype of each of `tensors`, for `writeSafetensors`'s `dtype` option. */
  dtype: QuantizedDTypes;
} {
  const rest = opts.rest ?? 'F16';
  const tensors: Record<string, Tensor> = {};
  const dtype: QuantizedDTypes = {};
  for (const [name, t] of Object.entries(weights)) {
    if (t.dtype !== 'float32' || t.shape.length !== 2) {
      tensors[name] = t;
      if (t.dtype === 'float32') dtype[name] = rest;
      continue;
    }
    const scaleName = name + SCALE_SUFFIX;
    if (Object.hasOwn(weights, scaleName))
      throw new Error(`quantizeInt8: '${scaleName}' is already a tensor, so '${name}' cannot take its scales there`);
    const [rows, cols] = t.shape;
    const w = t.dataSync<Float32Array>();
    const q = new Int32Array(rows * cols);
    const s = new Float32Array(rows);
    for (let r = 0; r < rows; r++) {
      let max = 0;
      for (let c = 0; c < cols; c++) {
        const v = w[r * cols + c];
        if (!Number.isFinite(v)) throw new Error(`quantizeInt8: '${name}' holds ${v} at row ${r}, column ${c}`);
        max = Math.max(max, Math.abs(v));
      }
      const scale = Math.fround(max / 127);
      s[r] = scale;
      if (scale === 0) continue;
      for (let c = 0; c < cols; c++) q[r * cols + c] = Math.max(-127, Math.min(127, rint(w[r * cols + c] / scale)));
    }
    tensors[name] = new Tensor(q, [rows, cols], 'int32');
    tensors[scaleName] = new Tensor(s, [rows, 1], 'float32');
    dtype[name] = 'I8';
    dtype[scaleName] = 'F32';
  }
  return { tensors, dtype };
}

/**
 * `tensors` with every quantized weight (an integer tensor `NAME` with a float `NAME_scale` beside
 * it) as float32 q · s, and the scales dropped; anything else as it is (the same object when
 * nothing is quantized). A scale tensor of the wrong shape, or a scale that is negative or not
 * finite, or a value outside int8, is an error naming the tensor.
 */
export function dequantizeInt8(tensors: Record<string, Tensor>): Record<string, Tensor> {
  const quantized = Object.keys(tensors).filter(
    (k) => tensors[k].dtype === 'int32' && tensors[k + SCALE_SUFFIX]?.dtype === 'float32',
  );
  if (quantized.length === 0) return tensors;
  const out: Record<string, Tensor> = { ...tensors };
  for (const name of quantized) {
    const t = tensors[name];
    const scaleName = name + SCALE_SUFFIX;
    const st = tensors[scaleName];
    const rows = t.shape[0];
    if (t.shape.length !== 2 || st.shape.length !== 2 || st.shape[0] !== rows || st.shape[1] !== 1) {
      throw new Error(
        `int8 weight '${name}' ${shapeToString(t.shape)} needs '${scaleName}' ` +
          `of shape [${t.shape.length === 2 ? rows : 'rows'}, 1] (one scale per ` +
          `row of a 2-D weight), got ${shapeToString(st.shape)}`,
      );
    }
    const cols = t.shape[1];
    const q = t.dataSync<Int32Array>();
    const s = st.dataSync<Float32Array>();
    const w = new Float32Array(q.length);
    for (let r = 0; r < rows; r++) {
      const scale = s[r];
      if (!(scale >= 0) || scale === Infinity)
        throw new Error(
          `int8 weight '${name}': scale ${scale} at row ${r} of '${scaleName}' ` +
            `(expected a finite scale ≥ 0): the file is corrupt`,
        );
      for (let c = 0; c < cols; c++) {
        const v = q[r * cols + c];
        if (v < -128 || v > 127)
          throw new Error(`int8 weight '${name}' holds ${v} at row ${r}, column ${c}, outside int8 [-128, 127]`);
        w[r * cols + c] = v * scale;
      }
    }
    out[name] = new Tensor(w, [rows, cols], 'float32');
    delete out[scaleName];
  }
  return out;
}

/**
 * A quantized model's state dict (`module.quantize()`: int8 and q4 values with `NAME_scale` beside them) as a
 * safetensors file holds it: int8 values as I8 beside F32 scales [rows, 1]; q4 values, which safetensors has
 * no dtype for, as their packed bytes, U8 of shape [rows, cols/2] (element 2i of a row in the low nibble of
 * byte i, two's complement), beside scales [rows, cols/32], F16 (their bits as held: 4.5 bits a weight,
 * llama.cpp's Q4_0) or F32 where the model holds float32 ones (a q4 file of older qkv, loaded); other float
 * tensors `rest` (F16 by default). Returns the tensors and the dtype record for `writeSafetensors`.
 */
export function quantizedForFile(
  weights: Record<string, Tensor>,
  opts: { rest?: 'F16' | 'F32' } = {},
): { tensors: Record<string, Tensor>; dtype: QuantizedDTypes } {
  const tensors: Record<string, Tensor> = {};
  const dtype: QuantizedDTypes = {};
  for (const [name, t] of Object.entries(weights)) {
    const quantized = t.dtype === 'int8' || t.dtype === 'q4';
    if (quantized && !Object.hasOwn(weights, name + SCALE_SUFFIX))
      throw new Error(`quantizedForFile: ${t.dtype} tensor '${name}' has no '${name + SCALE_SUFFIX}' beside it`);
    if (t.dtype === 'q4') {
      const [rows, cols] = t.shape;
      tensors[name] = new Tensor(t.dataSync<Uint8Array>(), [rows, cols / 2], 'uint8');
      dtype[name] = 'U8';
    } else {
      tensors[name] = t;
      if (t.dtype === 'int8') dtype[name] = 'I8';
      else if (t.dtype === 'float16') dtype[name] = 'F16';
      else if (t.dtype === 'float32')
        dtype[name] =
          Object.hasOwn(weights, name.slice(0, -SCALE_SUFFIX.length)) && name.endsWith(SCALE_SUFFIX)
            ? 'F32'
            : (opts.rest ?? 'F16');
    }
  }
  return { tensors, dtype };
}

/** What a quantized file's metadata says of its layout (`quantization`). */
export const QUANTIZED_METADATA =
  'NAME with NAME_scale beside it is quantized: int8 (I8) rows times NAME_scale [rows, 1], or q4 packed ' +
  'two a byte (U8 [rows, cols/2], element 2i in the low nibble, signed) times NAME_scale [rows, cols/32] ' +
  '(a scale per block of 32 in a row, F16; F32 in files of older qkv)';
