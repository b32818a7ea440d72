/**
 * Decoding on ONNX Runtime: the graphs of `qkv export --format onnx` behind the same step
 * interface as qkv's own models, so greedy, beam search and sampling are the code of search.ts
 * and gpt.ts, unchanged. Nothing here imports ONNX Runtime: the caller passes its module
 * (onnxruntime-node, or onnxruntime-web in a browser) and the sessions, typed structurally below.
 *
 * The key/value cache lives in plain Float32Arrays between steps, in the graphs' layout
 * (B, h, T, dK), exactly as qkv's TransformerDecoderCache / GPTCache; reordering beams gathers rows.
 */
import { Tensor } from '../tensor/tensor.ts';
import { gatherRows } from '../nn/kv-cache.ts';
import { logProbs, type AsyncStepper } from './stepper.ts';
import {
  beamSearchAsync,
  greedySearchAsync,
  maxLengths,
  type BeamSearchResult,
  type DecodeOptions,
  type DecodeResult,
} from './search.ts';
import type { AsyncLm } from './gpt.ts';
import type { OnnxManifest } from '../io/onnx/export.ts';

/** The parts of an ONNX Runtime tensor used here (onnxruntime-common's Tensor). */
export interface OrtTensorLike {
  /** The elements (a Float32Array for the float outputs read here). */
  readonly data: unknown;
  /** The shape. */
  readonly dims: readonly number[];
}

/** An ONNX Runtime module: its Tensor constructor. */
export interface OrtLike {
  /** `new ort.Tensor(type, data, dims)`: an input tensor (token ids as int64, cached keys/values as float32). */
  Tensor: {
    /** A tensor of `type` holding `data` in the shape `dims`. */
    new (type: 'float32' | 'int64', data: Float32Array | BigInt64Array, dims: readonly number[]): OrtTensorLike;
  };
}

/** An InferenceSession. */
export interface OrtSessionLike {
  /** Run the graph on inputs by name; resolves to its outputs by name. */
  run(feeds: Record<string, OrtTensorLike>): Promise<Record<string, OrtTensorLike>>;
}

/** What decoding reads from onnx.json: the manifest's shape fields (io/onnx/export.ts). */
export type OrtModelInfo = Pick<
  OnnxManifest,
  'numLayers' | 'numHeads' | 'numKeyValueHeads' | 'headDim' | 'vocabSize' | 'maxPositions' | 'padId'
>;

function int64(ids: ArrayLike<number>): BigInt64Array {
  const out = new BigInt64Array(ids.length);
  for (let i = 0; i < ids.length; i++) out[i] = BigInt(ids[i]);
  return out;
}

function f32(t: OrtTensorLike, name: string): Float32Array {
  if (!(t?.data instanceof Float32Array)) throw new Error(`ONNX Runtime: output '${name}' is missing or not float32`);
  return t.data;
}

interface KV {
  data: Float32Array;
  dims: number[];
}

function gatherKV(kv: KV, rows: Int32Array): KV {
  const t = gatherRows(new Tensor(kv.data, kv.dims.slice(), 'float32'), rows);
  return { data: t.dataSync<Float32Array>(), dims: t.shape.slice() };
}

/** A translation model exported to ONNX: encoder, first decoder step, and decoder steps with past. */
export class OrtSeq2Seq {
  constructor(
    /** The ONNX Runtime module (`onnxruntime-node` or `onnxruntime-web`), for its Tensor class. */
    readonly ort: OrtLike,
    /** One InferenceSession per exported graph. */
    readonly sessions: {
      /** encoder_model.onnx: source ids and mask → memory (B, S, E). */
      encoder: OrtSessionLike;
      /** decoder_model.onnx: the first step, which also computes the cross-attention keys/values. */
      decoder: OrtSessionLike;
      /** decoder_with_past_model.onnx: every later step, fed the cache of the steps before. */
      decoderWithPast: OrtSessionLike;
    },
    /** The shape fields of the export's onnx.json; must have padId. */
    readonly info: OrtModelInfo,
  ) {
    if (info.padId === undefined) throw new Error('OrtSeq2Seq: onnx.json has no padId (is it a GPT export?)');
  }

  /** Encoder output (B, S, E) and the keep-mask (B, S) of source ids src (B, S) int32. */
  async encode(src: Tensor): Promise<{
    /** The encoder output (B, S, E), `last_hidden_state`. */
    memory: OrtTensorLike;
    /** 1 for a source token, 0 for padding, (B, S) int64. */
    mask: BigInt64Array;
  }> {
    const [B, S] = src.shape;
    const mask = new BigInt64Array(B * S);
    const ids = src.dataSync();
    for (let i = 0; i < B * S; i++) mask[i] = ids[i] === this.info.padId ? 0n : 1n;
    const out = await this.sessions.encoder.run({
      input_ids: new this.ort.Tensor('int64', int64(src.dataSync<Int32Array>()), [B, S]),
      attention_mask: new this.ort.Tensor('int64', mask, [B, S]),
    });
    return { memory: out.last_hidden_state, mask };
  }

  /** Greedy decoding of source ids src (B, S) int32, step for step as qkv's own greedy search. */
  async greedy(src: Tensor, options: DecodeOptions): Promise<DecodeResult> {
    const { stepper, maxLens } = await this.start(src, options);
    return greedySearchAsync(stepper, maxLens, { ...options, padId: this.info.padId! });
  }

  /** Beam search over source ids src (B, S) int32, as qkv's own beam search (same beams, same scores). */
  async beamSearch(
    src: Tensor,
    options: DecodeOptions & { beamSize?: number; lengthPenalty?: number },
  ): Promise<BeamSearchResult> {
    const { stepper, maxLens } = await this.start(src, options);
    return beamSearchAsync(stepper, maxLens, { ...options, padId: this.info.padId! });
  }

  private async start(src: Tensor, options: DecodeOptions): Promise<{ stepper: OrtSeq2SeqStepper; maxLens: number[] }> {
    if (src.dtype !== 'int32' || src.ndim !== 2)
      throw new Error(
        `decode: src must be int32 token ids of shape (B, S), got ${src.dtype} [${src.shape.join(', ')}]`,
      );
    const { memory, mask } = await this.encode(src);
    const maxLens = maxLengths(src.dataSync(), src.shape, this.info.padId!, this.info.maxPositions, options.maxLen);
    return { stepper: new OrtSeq2SeqStepper(this, memory, mask, src.shape[1]), maxLens };
  }
}

/** The decoder's steps on ONNX Runtime, with the key/value cache between them. */
export class OrtSeq2SeqStepper implements AsyncStepper {
  private steps = 0;
  /** The encoder output, until the first step has turned it into cross-attention keys/values. */
  private memory: KV | null;
  /** Keep-mask (rows, S): 1 = source token, 0 = padding. */
  private mask: Int32Array;
  private readonly S: number;
  private self: { k: KV; v: KV }[] = [];
  private cross: { k: KV; v: KV }[] = [];
  /** For each row, the source sentence its memory came from (rows of one source share it). */
  private rowSource: Int32Array;

  constructor(
    private readonly m: OrtSeq2Seq,
    memory: OrtTensorLike,
    mask: BigInt64Array,
    S: number,
    /** Rule the padding id out of every step (qkv's search); Hugging Face's generate() does not (hf-search.ts). */
    private readonly maskPadding = true,
  ) {
    this.memory = { data: f32(memory, 'last_hidden_state'), dims: memory.dims.slice() };
    const B = memory.dims[0];
    this.mask = Int32Array.from(mask, (x) => Number(x));
    this.S = S;
    this.rowSource = Int32Array.from({ length: B }, (_, i) => i);
  }

  get rows(): number {
    return this.rowSource.length;
  }

  get vocabSize(): number {
    return this.m.info.vocabSize;
  }

  /**
   * Feed each row's last id (rows); resolves to log-probabilities (rows × vocab), padding id at −∞ (unless
   * maskPadding is false), as Stepper.step.
   */
  async step(last: Int32Array): Promise<Float32Array> {
    const { ort, sessions, info } = this.m;
    const N = last.length;
    const T = (t: KV) => new ort.Tensor('float32', t.data, t.dims);
    const feeds: Record<string, OrtTensorLike> = {
      input_ids: new ort.Tensor('int64', int64(last), [N, 1]),
      encoder_attention_mask: new ort.Tensor('int64', int64(this.mask), [N, this.S]),
    };
    const first = this.memory !== null;
    if (this.memory) feeds.encoder_hidden_states = T(this.memory);
    else {
      for (let i = 0; i < info.numLayers; i++) {
        feeds[`past_key_values.${i}.decoder.key`] = T(this.self[i].k);
        feeds[`past_key_values.${i}.decoder.value`] = T(this.self[i].v);
        feeds[`past_key_values.${i}.encoder.key`] = T(this.cross[i].k);
        feeds[`past_key_values.${i}.encoder.value`] = T(this.cross[i].v);
      }
    }
    const out = await (first ? sessions.decoder : sessions.decoderWithPast).run(feeds);
    const kv = (name: string): KV => ({ data: f32(out[name], name), dims: out[name].dims.slice() });
    this.self = Array.from({ length: info.numLayers }, (_, i) => ({
      k: kv(`present.${i}.decoder.key`),
      v: kv(`present.${i}.decoder.value`),
    }));
    if (first) {
      this.cross = Array.from({ length: info.numLayers }, (_, i) => ({
        k: kv(`present.${i}.encoder.key`),
        v: kv(`present.${i}.encoder.value`),
      }));
      this.memory = null;
    }
    const logits = f32(out.logits, 'logits'); // (N, 1, V)
    const pad = this.maskPadding ? info.padId! : -1;
    return logProbs(new Tensor(logits, [N, info.vocabSize], 'float32'), pad, ++this.steps);
  }

  reorder(rows: Int32Array): void {
    const N = this.rows;
    for (const r of rows)
      if (!Number.isInteger(r) || r < 0 || r >= N)
        throw new Error(`OrtSeq2SeqStepper.reorder: row ${r} is out of range for ${N} rows`);
    const source = rows.map((r) => this.rowSource[r]);
    const sameSource = source.length === N && source.every((s, i) => s === this.rowSource[i]);
    this.self = this.self.map(({ k, v }) => ({ k: gatherKV(k, rows), v: gatherKV(v, rows) }));
    if (!sameSource) {
      this.cross = this.cross.map(({ k, v }) => ({ k: gatherKV(k, rows), v: gatherKV(v, rows) }));
      if (this.memory) this.memory = gatherKV(this.memory, rows);
      this.mask = gatherRows(new Tensor(this.mask, [N, this.S], 'int32'), rows).dataSync() as Int32Array;
    }
    this.rowSource = source;
  }
}

/** A GPT exported to ONNX, as an engine for generateStreamAsync (one sequence). */
export class OrtGpt implements AsyncLm {
  private past: { k: KV; v: KV }[] = [];

  constructor(
    /** The ONNX Runtime module (`onnxruntime-node` or `onnxruntime-web`), for its Tensor class. */
    readonly ort: OrtLike,
    /** The session of the exported decoder_model.onnx (logits and present keys/values from ids and past). */
    readonly session: OrtSessionLike,
    /** The shape fields of the export's onnx.json. */
    readonly info: OrtModelInfo,
  ) {}

  /** Number of token ids (onnx.json's vocabSize). */
  get vocabSize(): number {
    return this.info.vocabSize;
  }

  /** Longest context (onnx.json's maxPositions). */
  get blockSize(): number {
    return this.info.maxPositions;
  }

  /** Logits (L, V) of feeding `fed` after the cached context (or an empty one when `fresh`). */
  async logits(fed: number[], fresh: boolean): Promise<Float32Array> {
    const { ort, info } = this;
    const heads = info.numKeyValueHeads ?? info.numHeads; // the cache holds the KV heads only
    const empty = (): KV => ({ data: new Float32Array(0), dims: [1, heads, 0, info.headDim] });
    if (fresh || this.past.length === 0)
      this.past = Array.from({ length: info.numLayers }, () => ({ k: empty(), v: empty() }));
    const feeds: Record<string, OrtTensorLike> = { input_ids: new ort.Tensor('int64', int64(fed), [1, fed.length]) };
    this.past.forEach(({ k, v }, i) => {
      feeds[`past_key_values.${i}.key`] = new ort.Tensor('float32', k.data, k.dims);
      feeds[`past_key_values.${i}.value`] = new ort.Tensor('float32', v.data, v.dims);
    });
    const out = await this.session.run(feeds);
    const kv = (name: string): KV => ({ data: f32(out[name], name), dims: out[name].dims.slice() });
    this.past = this.past.map((_, i) => ({ k: kv(`present.${i}.key`), v: kv(`present.${i}.value`) }));
    return f32(out.logits, 'logits');
  }

  /** The last position's next-token logits (vocabSize) after feeding `fed` (see {@link AsyncLm.run}). */
  async run(fed: number[], fresh: boolean): Promise<Float32Array> {
    const all = await this.logits(fed, fresh);
    const V = this.info.vocabSize;
    return all.slice((fed.length - 1) * V, fed.length * V);
  }
}
