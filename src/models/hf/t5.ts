/**
 * Hugging Face T5 / Flan-T5 (modeling_t5.py) over qkv's own nn pieces: nn.MultiheadAttention (bias-free, head width
 * d_kv: `headDim`), nn.RMSNorm (T5's layer norm: eps 1e-6, no bias, no mean removed), nn.RelativePositionBias and
 * nn.Linear. Pre-norm blocks; no position encoding (the first layer's relative bias, reused by every layer of its
 * stack, is added to the self-attention scores); T5's scores are not scaled by 1/√d_kv, so q's projection is
 * multiplied by √d_kv at load (exact for d_kv a power of 4); the head is the shared table, scaled by d_model^-0.5
 * (`scale_decoder_outputs`, T5 v1.0) or not (v1.1 / Flan-T5), or a separate `lm_head.weight` where the file has one.
 *
 * Incremental decoding (initCache, decodeStep) keeps per decoder layer the self-attention keys/values of the prefix
 * and the cross-attention keys/values of the encoder states, computed once, in nn/kv-cache.ts's
 * TransformerDecoderCache (reordered by beam search as Marian's); the one new query, at position t, gets the bias of
 * the relative positions j − t of the keys j = 0..t, as transformers' `compute_bias` gives it with a cache (the query
 * at `cache_position`, not at 0).
 */
import * as F from '../../ops/index.ts';
import { MultiheadAttention } from '../../nn/attention.ts';
import { Embedding, Linear, RMSNorm } from '../../nn/layers.ts';
import { Module } from '../../nn/module.ts';
import { RelativePositionBias } from '../../nn/relative-position-bias.ts';
import { appendSelf, TransformerDecoderCache, type DecoderLayerCache } from '../../nn/kv-cache.ts';
import { maskToBias } from '../../ops/attention.ts';
import { shapeToString } from '../../tensor/shape.ts';
import { Tensor } from '../../tensor/tensor.ts';

/** What defines a T5 model (config.json's keys, camelCased). */
export interface T5Config {
  vocabSize: number;
  dModel: number;
  dKv: number;
  numHeads: number;
  dFf: number;
  numLayers: number;
  numDecoderLayers: number;
  numBuckets: number;
  maxDistance: number;
  eps: number;
  /** feed_forward_proj 'gated-gelu' (Flan-T5: gelu_new(wi_0 x) · wi_1 x); else 'relu'. */
  gated: boolean;
  /** The decoder output × d_model^-0.5 before the head (T5 v1.0; transformers' scale_decoder_outputs). */
  scaleDecoderOutputs: boolean;
  /** A head of its own (lm_head.weight in the file); else the shared table. */
  separateHead: boolean;
  padId: number;
}

/** config.json → T5Config; one line naming the key that does not fit. */
export function t5ConfigFromHf(json: Record<string, unknown>, separateHead: boolean): T5Config {
  if (json.model_type !== 't5') throw new Error(`config.json: model_type '${String(json.model_type)}' is not 't5'`);
  const int = (k: string, fallback?: number): number => {
    const v = json[k] ?? fallback;
    if (!Number.isInteger(v) || (v as number) <= 0)
      throw new Error(`config.json: ${k} must be a positive integer, got ${JSON.stringify(v)}`);
    return v as number;
  };
  const ff = json.feed_forward_proj ?? 'relu';
  if (ff !== 'relu' && ff !== 'gated-gelu')
    throw new Error(`config.json: feed_forward_proj ${JSON.stringify(ff)} is not supported (relu, gated-gelu)`);
  const numLayers = int('num_layers');
  return {
    vocabSize: int('vocab_size'),
    dModel: int('d_model'),
    dKv: int('d_kv'),
    numHeads: int('num_heads'),
    dFf: int('d_ff'),
    numLayers,
    numDecoderLayers: int('num_decoder_layers', numLayers),
    numBuckets: int('relative_attention_num_buckets', 32),
    maxDistance: int('relative_attention_max_distance', 128),
    eps: typeof json.layer_norm_epsilon === 'number' ? json.layer_norm_epsilon : 1e-6,
    gated: ff === 'gated-gelu',
    // transformers 5 reads a v1.0 config's missing tie_word_embeddings (or true) as "scale", false as "do not".
    scaleDecoderOutputs: json.scale_decoder_outputs ?? json.tie_word_embeddings !== false,
    separateHead,
    padId: typeof json.pad_token_id === 'number' ? json.pad_token_id : 0,
  } as T5Config;
}

/** T5's feed-forward: wo(relu(wi x)) or wo(gelu_new(wi_0 x) · wi_1 x), no biases. */
class T5FeedForward extends Module {
  readonly wi: Linear[];
  readonly wo: Linear;
  constructor(private readonly c: T5Config) {
    super();
    const n = c.gated ? 2 : 1;
    this.wi = Array.from({ length: n }, (_, i) =>
      this.registerModule(c.gated ? `wi_${i}` : 'wi', new Linear(c.dModel, c.dFf, { bias: false })),
    );
    this.wo = this.registerModule('wo', new Linear(c.dFf, c.dModel, { bias: false }));
  }
  forward(x: Tensor): Tensor {
    const h = this.c.gated
      ? F.mul(F.gelu(this.wi[0].forward(x), 'tanh'), this.wi[1].forward(x))
      : F.relu(this.wi[0].forward(x));
    return this.wo.forward(h);
  }
}

function attention(c: T5Config): MultiheadAttention {
  return new MultiheadAttention(c.dModel, c.numHeads, { bias: false, headDim: c.dKv, batchFirst: true });
}

/** Where a pass records its attention weights, (B, h, L, S) per layer: what the explorer draws (viz/). */
export interface T5Weights {
  /** Self-attention, one per layer. */
  self: Tensor[];
  /** Cross-attention (the decoder's), one per layer. */
  cross: Tensor[];
}

/** The per-head weights (B, h, L, S) of one attention call. */
function weightsOf(
  mha: MultiheadAttention,
  x: Tensor,
  kv: Tensor,
  masks: { attnMask?: Tensor; keyPaddingMask?: Tensor | null },
): Tensor {
  return mha.forward(x, kv, kv, { ...masks, needWeights: true, averageAttnWeights: false }).weights!;
}

/** One block: self-attention (+ cross-attention in the decoder) and the feed-forward, each pre-normed, residual. */
class T5Block extends Module {
  readonly norms: RMSNorm[];
  readonly selfAttn: MultiheadAttention;
  readonly crossAttn: MultiheadAttention | null;
  readonly ff: T5FeedForward;
  constructor(c: T5Config, decoder: boolean) {
    super();
    this.norms = Array.from({ length: decoder ? 3 : 2 }, (_, i) =>
      this.registerModule(`norm${i}`, new RMSNorm(c.dModel, { eps: c.eps })),
    );
    this.selfAttn = this.registerModule('self_attn', attention(c));
    this.crossAttn = decoder ? this.registerModule('cross_attn', attention(c)) : null;
    this.ff = this.registerModule('ff', new T5FeedForward(c));
  }
  /**
   * x (B, T, d); bias (B·h, T, T) added to the self-attention scores; memory (B, S, d) for the decoder. With
   * `record`, each attention's weights (B, h, T, ·) are pushed to it, from a second call of the same module (the
   * stream is the one without weights).
   */
  forward(x: Tensor, bias: Tensor, memory: Tensor | null, srcPadding: Tensor | null, record?: T5Weights): Tensor {
    let h = this.norms[0].forward(x);
    x = F.add(x, this.selfAttn.forward(h, h, h, { attnMask: bias, needWeights: false }).output);
    if (record) record.self.push(weightsOf(this.selfAttn, h, h, { attnMask: bias }));
    if (this.crossAttn && memory) {
      h = this.norms[1].forward(x);
      const o = this.crossAttn.forward(h, memory, memory, { keyPaddingMask: srcPadding, needWeights: false });
      if (record) record.cross.push(weightsOf(this.crossAttn, h, memory, { keyPaddingMask: srcPadding }));
      x = F.add(x, o.output);
    }
    return F.add(x, this.ff.forward(this.norms[this.norms.length - 1].forward(x)));
  }

  /**
   * A decoder block on one new position x (N, 1, d): its self-attention keys/values join `cache`, its query attends
   * to every cached position with `bias` (1, h, 1, t + 1) added, then to the cached memory keys/values.
   */
  forwardStep(x: Tensor, cache: DecoderLayerCache, bias: Tensor, memoryPadding: Tensor | null): Tensor {
    const sa = this.selfAttn;
    const { q, k, v } = sa.projectSelf(this.norms[0].forward(x)); // (N, h, 1, dK) each
    appendSelf(cache, k, v); // selfK, selfV (N, h, t + 1, dK)
    x = F.add(x, sa.attendProjected(q, cache.selfK!, cache.selfV!, { attnBias: bias }).output);
    const ca = this.crossAttn!;
    const cq = ca.projectQuery(this.norms[1].forward(x)); // (N, h, 1, dK)
    x = F.add(x, ca.attendProjected(cq, cache.memoryK, cache.memoryV, { keyPaddingMask: memoryPadding }).output);
    return F.add(x, this.ff.forward(this.norms[2].forward(x)));
  }
}

/** A T5 encoder-decoder (see the file comment). */
export class T5 extends Module {
  readonly shared: Embedding;
  readonly encoderBias: RelativePositionBias;
  readonly decoderBias: RelativePositionBias;
  readonly encoder: T5Block[];
  readonly decoder: T5Block[];
  readonly encoderNorm: RMSNorm;
  readonly decoderNorm: RMSNorm;
  readonly lmHead: Linear | null;

  constructor(readonly config: T5Config) {
    super();
    const c = config;
    this.shared = this.registerModule('shared', new Embedding(c.vocabSize, c.dModel));
    this.encoderBias = this.registerModule(
      'encoder_bias',
      new RelativePositionBias(c.numHeads, c.numBuckets, c.maxDistance, true),
    );
    this.decoderBias = this.registerModule(
      'decoder_bias',
      new RelativePositionBias(c.numHeads, c.numBuckets, c.maxDistance, false),
    );
    this.encoder = Array.from({ length: c.numLayers }, (_, i) =>
      this.registerModule(`encoder_${i}`, new T5Block(c, false)),
    );
    this.decoder = Array.from({ length: c.numDecoderLayers }, (_, i) =>
      this.registerModule(`decoder_${i}`, new T5Block(c, true)),
    );
    this.encoderNorm = this.registerModule('encoder_norm', new RMSNorm(c.dModel, { eps: c.eps }));
    this.decoderNorm = this.registerModule('decoder_norm', new RMSNorm(c.dModel, { eps: c.eps }));
    this.lmHead = c.separateHead
      ? this.registerModule('lm_head', new Linear(c.dModel, c.vocabSize, { bias: false }))
      : null;
  }

  /** The (1, h, L, S) bias repeated for B rows as (B·h, L, S), with `extra` (L, S) added (the causal mask). */
  private biasFor(rpb: RelativePositionBias, B: number, L: number, S: number, extra?: Float32Array): Tensor {
    const b = rpb.forward(L, S).dataSync<Float32Array>(); // (1, h, L, S)
    const h = this.config.numHeads;
    const out = new Float32Array(B * h * L * S);
    for (let r = 0; r < B; r++) out.set(b, r * h * L * S);
    if (extra) for (let i = 0; i < out.length; i++) out[i] += extra[i % (L * S)];
    return new Tensor(out, [B * h, L, S], 'float32');
  }

  /**
   * ids (B, S) → the encoder's last hidden states (B, S, d). Padding ids are masked as keys. With `record`, each
   * layer's self-attention weights (B, h, S, S) are pushed to it.
   */
  encode(src: Tensor, record?: Tensor[]): Tensor {
    const [B, S] = src.shape;
    // The padding keys ruled out through the bias (T5 adds its mask to the position bias).
    const ids = src.dataSync<Int32Array>();
    const bias = this.biasFor(this.encoderBias, B, S, S).dataSync<Float32Array>().slice();
    const h = this.config.numHeads;
    for (let r = 0; r < B; r++)
      for (let j = 0; j < S; j++)
        if (ids[r * S + j] === this.config.padId)
          for (let hh = 0; hh < h; hh++) for (let i = 0; i < S; i++) bias[((r * h + hh) * S + i) * S + j] = -Infinity;
    const mask = new Tensor(bias, [B * h, S, S], 'float32');
    let x = this.shared.forward(src);
    const weights = record && { self: record, cross: [] };
    for (const block of this.encoder) x = block.forward(x, mask, null, null, weights);
    return this.encoderNorm.forward(x);
  }

  /**
   * Next-token logits (B, T, V) for target prefixes (B, T) over the encoder's states. With `record`, each layer's
   * self-attention (B, h, T, T) and cross-attention (B, h, T, S) weights are pushed to it.
   */
  decode(tgt: Tensor, memory: Tensor, srcPadding: Tensor, record?: T5Weights): Tensor {
    const [B, T] = tgt.shape;
    const causal = new Float32Array(T * T);
    for (let i = 0; i < T; i++) for (let j = i + 1; j < T; j++) causal[i * T + j] = -Infinity;
    const bias = this.biasFor(this.decoderBias, B, T, T, causal);
    let x = this.shared.forward(tgt);
    for (const block of this.decoder) x = block.forward(x, bias, memory, srcPadding, record);
    return this.head(x);
  }

  /** The decoder's last states (…, d) → logits (…, V): the final norm, T5 v1.0's d_model^-0.5, the head. */
  private head(x: Tensor): Tensor {
    x = this.decoderNorm.forward(x);
    if (this.config.scaleDecoderOutputs) x = F.mul(x, this.config.dModel ** -0.5);
    return this.lmHead ? this.lmHead.forward(x) : this.shared.attend(x);
  }

  /** The logits' width (decode/stepper.ts's CachedStepper reads it, as of a Seq2Seq). */
  get targetVocabSize(): number {
    return this.config.vocabSize;
  }

  /**
   * Start incremental decoding over the encoder's states memory (N, S, d) and their padding (N, S), TRUE = padding:
   * each decoder layer's cross-attention keys and values, computed once. Reorder rows with `cache.reorder(rows)`.
   */
  initCache(memory: Tensor, srcPadding: Tensor | null): TransformerDecoderCache {
    if (memory.ndim !== 3 || memory.shape[2] !== this.config.dModel)
      throw new Error(`T5.initCache: memory must be (N, S, ${this.config.dModel}), got ${shapeToString(memory.shape)}`);
    const [N, S] = memory.shape;
    let bias: Tensor | null = null;
    if (srcPadding) {
      if (srcPadding.ndim !== 2 || srcPadding.shape[0] !== N || srcPadding.shape[1] !== S)
        throw new Error(`T5.initCache: srcPadding must be (${N}, ${S}), got ${shapeToString(srcPadding.shape)}`);
      bias = maskToBias(srcPadding, 'block', 'T5.initCache', 'srcPadding');
      if (bias === srcPadding) bias = srcPadding.clone(); // the cache owns its copy
    }
    const layers = this.decoder.map((block): DecoderLayerCache => {
      const { k, v } = block.crossAttn!.projectKeyValue(memory, memory); // (N, h, S, dK) each
      return { selfK: null, selfV: null, memoryK: k, memoryV: v };
    });
    return new TransformerDecoderCache(layers, bias, N);
  }

  /**
   * One decoding step: each row's last id (N, 1) at position t = cache.length → the next-token logits (N, V); the
   * cache grows by one. Equal to decode()'s last row over the whole prefix.
   */
  decodeStep(lastTokens: Tensor, cache: TransformerDecoderCache): Tensor {
    cache.checkLive('decodeStep');
    const N = cache.batchSize;
    if (lastTokens.dtype !== 'int32' || lastTokens.ndim !== 2 || lastTokens.shape[0] !== N || lastTokens.shape[1] !== 1)
      throw new Error(
        `T5.decodeStep: lastTokens must be int32 ids (${N}, 1) (one per row of the cache), got ` +
          `${lastTokens.dtype} ${shapeToString(lastTokens.shape)}`,
      );
    if (cache.layers.length !== this.decoder.length)
      throw new Error(`T5.decodeStep: the cache has ${cache.layers.length} layers, the decoder ${this.decoder.length}`);
    const t = cache.length;
    // The query at position t against the keys 0..t (transformers: compute_bias at cache_position t): (1, h, 1, t + 1).
    const bias = this.decoderBias.forward(1, t + 1, t);
    let x = this.shared.forward(lastTokens); // (N, 1, d)
    this.decoder.forEach((block, i) => {
      x = block.forwardStep(x, cache.layers[i], bias, cache.memoryKeyPaddingMask);
    });
    cache.length = t + 1;
    return this.head(x).reshape(N, this.config.vocabSize);
  }
}

/**
 * HF T5 tensors → a T5's state dict: q's rows multiplied by √d_kv (T5 does not scale its scores), q/k/v packed
 * into in_proj_weight. An Error names a missing or unexpected tensor.
 */
export function t5StateDict(tensors: Record<string, Tensor>, c: T5Config): Record<string, Tensor> {
  const used = new Set<string>();
  const take = (name: string): Tensor => {
    const t = tensors[name];
    if (!t) throw new Error(`missing tensor ${name}`);
    used.add(name);
    return t;
  };
  const packed = (p: string): Tensor => {
    const q = take(`${p}.q.weight`).dataSync<Float32Array>();
    const k = take(`${p}.k.weight`).dataSync<Float32Array>();
    const v = take(`${p}.v.weight`).dataSync<Float32Array>();
    const out = new Float32Array(q.length * 3);
    const s = Math.sqrt(c.dKv);
    for (let i = 0; i < q.length; i++) out[i] = q[i] * s;
    out.set(k, q.length);
    out.set(v, 2 * q.length);
    return new Tensor(out, [3 * c.numHeads * c.dKv, c.dModel], 'float32'); // rows [q; k; v]
  };
  const out: Record<string, Tensor> = { 'shared.weight': take('shared.weight') };
  for (const n of ['encoder.embed_tokens.weight', 'decoder.embed_tokens.weight']) if (tensors[n]) used.add(n);
  if (c.separateHead) out['lm_head.weight'] = take('lm_head.weight');
  for (const side of ['encoder', 'decoder'] as const) {
    const n = side === 'encoder' ? c.numLayers : c.numDecoderLayers;
    out[`${side}_bias.relative_attention_bias.weight`] = take(
      `${side}.block.0.layer.0.SelfAttention.relative_attention_bias.weight`,
    );
    out[`${side}_norm.weight`] = take(`${side}.final_layer_norm.weight`);
    for (let i = 0; i < n; i++) {
      const hf = `${side}.block.${i}.layer`;
      const q = `${side}_${i}`;
      out[`${q}.self_attn.in_proj_weight`] = packed(`${hf}.0.SelfAttention`);
      out[`${q}.self_attn.out_proj.weight`] = take(`${hf}.0.SelfAttention.o.weight`);
      out[`${q}.norm0.weight`] = take(`${hf}.0.layer_norm.weight`);
      const ffLayer = side === 'encoder' ? 1 : 2;
      if (side === 'decoder') {
        out[`${q}.cross_attn.in_proj_weight`] = packed(`${hf}.1.EncDecAttention`);
        out[`${q}.cross_attn.out_proj.weight`] = take(`${hf}.1.EncDecAttention.o.weight`);
        out[`${q}.norm1.weight`] = take(`${hf}.1.layer_norm.weight`);
      }
      out[`${q}.norm${ffLayer}.weight`] = take(`${hf}.${ffLayer}.layer_norm.weight`);
      for (const w of c.gated ? ['wi_0', 'wi_1', 'wo'] : ['wi', 'wo'])
        out[`${q}.ff.${w}.weight`] = take(`${hf}.${ffLayer}.DenseReluDense.${w}.weight`);
    }
  }
  for (const name of Object.keys(tensors))
    if (!used.has(name)) throw new Error(`unexpected tensor ${name} (not part of a T5 model qkv reads)`);
  return out;
}
