/**
 * Loading a weights file into a model built from a config, with errors a user can act on:
 *
 * - a config that disagrees with its weights is one line: how many tensors mismatch, the first few,
 *   and the config field the shapes point at (`dModel 128 in config.json, the weights have 256`),
 *   instead of one clause per tensor;
 * - weights holding NaN or ±Infinity are refused at load (one pass over the values), naming the
 *   tensor and the first bad index: otherwise they load silently and decode to garbage.
 */
import type { Module } from '../nn/module.ts';
import { shapeToString } from '../tensor/shape.ts';
import { Tensor } from '../tensor/tensor.ts';
import { SCALE_SUFFIX } from '../tensor/quantize.ts';
import { exactHalves } from '../tensor/half.ts';
import { dequantizeWeight, Q4_BLOCK, type QuantDType } from '../ops/matmul.ts';

/** A config field whose value is one dimension of one tensor (e.g. dModel = embedding.weight's columns). */
export interface ShapeField {
  field: string;
  key: string;
  dim: number;
}

/** A config field that counts layers: the distinct indices N of keys starting with `${prefix}N.`. */
export interface LayerField {
  field: string;
  prefix: string;
}

/** How one config field shows in the weights: as a tensor's dimension or as a layer count. */
export type FieldRule = ShapeField | LayerField;

/** Where each Seq2Seq config field shows in the weights (nhead does not: it only splits dModel). */
export const SEQ2SEQ_FIELDS: readonly FieldRule[] = [
  { field: 'vocabSize', key: 'embedding.weight', dim: 0 },
  { field: 'dModel', key: 'embedding.weight', dim: 1 },
  { field: 'tgtVocabSize', key: 'tgtEmbedding.weight', dim: 0 },
  { field: 'dimFeedforward', key: 'transformer.encoder.layers.0.linear1.weight', dim: 0 },
  { field: 'numEncoderLayers', prefix: 'transformer.encoder.layers.' },
  { field: 'numDecoderLayers', prefix: 'transformer.decoder.layers.' },
];

/** The same for GPT (the MLP's width is 4·nEmbd, not a field). */
export const GPT_FIELDS: readonly FieldRule[] = [
  { field: 'vocabSize', key: 'wte.weight', dim: 0 },
  { field: 'nEmbd', key: 'wte.weight', dim: 1 },
  { field: 'blockSize', key: 'wpe.weight', dim: 0 },
  { field: 'nLayer', prefix: 'h.' },
];

/** How many tensors are named in full before "and N more". */
const SHOWN = 3;

function listed(items: string[]): string {
  const head = items.slice(0, SHOWN).join('; ');
  return items.length > SHOWN ? `${head}; and ${items.length - SHOWN} more` : head;
}

function layerCount(keys: Iterable<string>, prefix: string): number {
  const seen = new Set<string>();
  for (const k of keys) {
    if (!k.startsWith(prefix)) continue;
    const m = /^(\d+)\./.exec(k.slice(prefix.length));
    if (m) seen.add(m[1]);
  }
  return seen.size;
}

/**
 * One line saying how `weights` disagree with the model built from `config` (null when they agree):
 * the count and first few of each kind of mismatch, then the config fields the weights contradict.
 */
export function describeMismatch(
  own: Record<string, Tensor>,
  weights: Record<string, Tensor>,
  config: object,
  rules: readonly FieldRule[],
  configName = 'config.json',
): string | null {
  const ownKeys = Object.keys(own);
  const missing = ownKeys.filter((k) => !Object.hasOwn(weights, k));
  const unexpected = Object.keys(weights).filter((k) => !Object.hasOwn(own, k));
  const shapes: string[] = [];
  for (const k of ownKeys) {
    const w = weights[k];
    if (!Object.hasOwn(weights, k)) continue;
    const a = own[k].shape;
    const b = w.shape;
    if (a.length !== b.length || a.some((d, i) => d !== b[i]))
      shapes.push(`${k} ${shapeToString(a)} in ${configName}, ${shapeToString(b)} in the weights`);
  }
  if (missing.length + unexpected.length + shapes.length === 0) return null;
  const parts: string[] = [];
  if (shapes.length) parts.push(`${shapes.length} of ${ownKeys.length} tensors differ in shape (${listed(shapes)})`);
  if (missing.length) parts.push(`${missing.length} tensors missing from the weights (${listed(missing)})`);
  if (unexpected.length)
    parts.push(`${unexpected.length} tensors in the weights the model lacks (${listed(unexpected)})`);
  const values = config as Record<string, unknown>;
  const fields: string[] = [];
  for (const r of rules) {
    let theirs: number | undefined;
    if ('prefix' in r) {
      const n = layerCount(Object.keys(weights), r.prefix);
      if (n > 0) theirs = n;
    } else if (Object.hasOwn(weights, r.key)) {
      theirs = weights[r.key].shape[r.dim];
    }
    const ours = values[r.field];
    if (theirs !== undefined && ours !== theirs && !fields.some((f) => f.startsWith(`${r.field} `))) {
      fields.push(`${r.field} ${String(ours)} in ${configName}, the weights have ${theirs}`);
    }
  }
  const hint = fields.length ? `: ${fields.join('; ')}` : '';
  return `the weights do not match ${configName}${hint} (${parts.join('; ')})`;
}

/** Throw naming the first tensor that holds NaN or ±Infinity, and where. */
export function checkFinite(weights: Record<string, Tensor>): void {
  for (const [k, t] of Object.entries(weights)) {
    if (t.dtype !== 'float32') continue;
    const d = t.dataSync<Float32Array>();
    for (let i = 0; i < d.length; i++) {
      const v = d[i];
      if (v - v !== 0) {
        // NaN or ±Infinity, in one comparison
        const at = t.shape.length > 1 ? ` (row ${Math.floor(i / t.shape[t.shape.length - 1])})` : '';
        throw new Error(
          `tensor '${k}' holds ${String(v)} at index ${i}${at} of ` +
            `${shapeToString(t.shape)}: the weights are corrupt (a diverged ` +
            `training run or a damaged file)`,
        );
      }
    }
  }
}

/**
 * Check the weights against the model and its config (one line), check they are finite, then load
 * them. Quantized weights (`NAME` int8 or q4 and `NAME_scale`: docs/model-folder.md) load as they are stored
 * into the layers that hold quantized weights (see {@link quantizedAsStored}); the others are dequantized.
 */
export function loadWeights(
  model: Module,
  stored: Record<string, Tensor>,
  config: object,
  rules: readonly FieldRule[],
  configName = 'config.json',
): void {
  const weights = quantizedAsStored(model, stored);
  const mismatch = describeMismatch(model.stateDict(), weights, config, rules, configName);
  if (mismatch) throw new Error(mismatch);
  checkFinite(weights);
  model.loadStateDict(weights, { strict: true });
}

/**
 * `stored` as `model` takes it, without dequantizing. A quantized weight in a file is `NAME` with a float
 * `NAME_scale` beside it: int8 values (I8, read as int8, or as int32 by a reader that widens) with scales
 * (rows, 1), or q4 values packed two a byte (U8 (rows, cols/2), read as uint8) with scales (rows, cols/32):
 * F16 as qkv writes them (4.5 bits a weight), held as float16; F32 as older qkv wrote them, held as float16
 * where every one is a half exactly (the same values, so the same results), else as float32.
 * The layer of `model` that owns `NAME` is quantized to that dtype first (zero values, loaded next) where
 * it can hold a quantized weight (nn.Linear, attention's in_proj, nn.Embedding: Module.quantizeOwn); a
 * quantized tensor that no such layer owns comes back float32 (q·s), as every quantized tensor used to.
 * Values and scales are checked (int8 within −128..127, scales finite and >= 0), errors naming the tensor.
 */
export function quantizedAsStored(model: Module, stored: Record<string, Tensor>): Record<string, Tensor> {
  const names = Object.keys(stored).filter((k) => {
    const t = stored[k];
    return (
      ['int8', 'int32', 'uint8'].includes(t.dtype) &&
      Object.hasOwn(stored, k + SCALE_SUFFIX) &&
      stored[k + SCALE_SUFFIX].dtype === 'float32'
    );
  });
  if (names.length === 0) return stored;
  const out: Record<string, Tensor> = { ...stored };
  const modules = new Map(model.namedModules());
  for (const name of names) {
    const { values, scale } = quantizedPair(name, stored[name], stored[name + SCALE_SUFFIX]);
    const dot = name.lastIndexOf('.');
    const owner = modules.get(dot < 0 ? '' : name.slice(0, dot));
    const before = model.stateDict()[name];
    if (owner && before?.dtype === 'float32' && shapeToString(before.shape) === shapeToString(values.shape))
      owner.quantizeOwn({
        dtype: values.dtype as QuantDType,
        tables: values.dtype as QuantDType,
        empty: true,
        q4Scales: scale.dtype === 'float16' ? 'float16' : 'float32',
      });
    const own = model.stateDict();
    if (own[name]?.dtype === values.dtype && Object.hasOwn(own, name + SCALE_SUFFIX)) {
      out[name] = values;
      out[name + SCALE_SUFFIX] = scale;
    } else {
      out[name] = dequantizeWeight(values, scale);
      delete out[name + SCALE_SUFFIX];
    }
  }
  return out;
}

/** The stored tensors of quantized weight `name` as an int8 or q4 pair, checked. */
function quantizedPair(name: string, stored: Tensor, scale: Tensor): { values: Tensor; scale: Tensor } {
  const scaleName = name + SCALE_SUFFIX;
  if (stored.shape.length !== 2)
    throw new Error(`quantized weight '${name}' must be 2-D, got ${shapeToString(stored.shape)}`);
  const [rows, stCols] = stored.shape;
  const q4 = stored.dtype === 'uint8';
  const cols = q4 ? 2 * stCols : stCols;
  const want = [rows, q4 ? cols / Q4_BLOCK : 1];
  if (q4 && cols % Q4_BLOCK !== 0)
    throw new Error(
      `q4 weight '${name}' ${shapeToString(stored.shape)} (packed bytes, two values each) holds ${cols} ` +
        `columns, not a multiple of ${Q4_BLOCK}`,
    );
  if (shapeToString(scale.shape) !== shapeToString(want))
    throw new Error(
      `${q4 ? 'q4' : 'int8'} weight '${name}' ${shapeToString(stored.shape)} needs '${scaleName}' of shape ` +
        `${shapeToString(want)} (one scale per ${q4 ? `block of ${Q4_BLOCK} in a row` : 'row'}), ` +
        `got ${shapeToString(scale.shape)}`,
    );
  const s = scale.dataSync<Float32Array>();
  for (let i = 0; i < s.length; i++)
    if (!(s[i] >= 0) || s[i] === Infinity)
      throw new Error(
        `quantized weight '${name}': scale ${s[i]} at index ${i} of '${scaleName}' ` +
          '(expected a finite scale >= 0): the file is corrupt',
      );
  if (q4) {
    const halves = exactHalves(s);
    return {
      values: new Tensor(new Uint8Array(stored.dataSync<Uint8Array>()), [rows, cols], 'q4'),
      scale: halves ? new Tensor(halves, want, 'float16') : scale,
    };
  }
  const v = stored.dataSync<Int8Array | Int32Array>();
  for (let i = 0; i < v.length; i++)
    // −128 too: qkv's quantizers write −127..127, but every kernel computes −128 exactly (issue 61).
    if (v[i] < -128 || v[i] > 127)
      throw new Error(
        `int8 weight '${name}' holds ${v[i]} at row ${Math.floor(i / cols)}, column ${i % cols}, ` +
          'outside int8 −128..127',
      );
  return { values: stored.dtype === 'int8' ? stored : new Tensor(Int8Array.from(v), [rows, cols], 'int8'), scale };
}
