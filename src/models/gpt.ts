/**
 * Over 500 lines: GPT-2's decoder and the switches of today's decoders (RMS norm, rotary positions, grouped KV heads,
 * the gated MLP, a sliding window) read as one model top to bottom, as the design asks (a family is a configuration).
 *
 * A decoder-only language model in GPT-2's layout (Radford et al. 2019), readable top to bottom:
 * a token is embedded (wte), given its position (wpe, or the paper's sinusoids), passed through
 * nLayer pre-norm blocks of causal self-attention and an MLP, normalised once more (ln_f), and
 * projected back onto the vocabulary with the token embedding matrix itself (tied weights).
 *
 * State-dict names are GPT-2's module paths with torch.nn layers inside them:
 *
 *   wte.weight                         (vocabSize, nEmbd)
 *   wpe.weight                         (blockSize, nEmbd)      learned positions only
 *   h.{i}.ln_1.weight / .bias          (nEmbd)
 *   h.{i}.attn.in_proj_weight / _bias  (3·nEmbd, nEmbd) / (3·nEmbd)   torch.nn.MultiheadAttention
 *   h.{i}.attn.out_proj.weight / .bias (nEmbd, nEmbd) / (nEmbd)
 *   h.{i}.ln_2.weight / .bias          (nEmbd)
 *   h.{i}.mlp.c_fc.weight / .bias      (4·nEmbd, nEmbd) / (4·nEmbd)    torch.nn.Linear layout
 *   h.{i}.mlp.c_proj.weight / .bias    (nEmbd, 4·nEmbd) / (nEmbd)
 *   ln_f.weight / .bias                (nEmbd)
 *
 * There is no lm_head.weight: the output projection is wte.weight. Hugging Face's GPT-2 stores
 * `attn.c_attn` / `attn.c_proj` / `mlp.c_fc` / `mlp.c_proj` as Conv1D, i.e. the transposes of these
 * (c_attn.weight (E, 3E) = in_proj_weightᵀ, attn.c_proj.weight = out_proj.weightᵀ, ...).
 */
import * as F from '../ops/index.ts';
import { MultiheadAttention } from '../nn/attention.ts';
import { appendKeysValues, cropKeysValues, type KeyValueCache, ownLayers, releaseOwnedLayers } from '../nn/kv-cache.ts';
import { constant_, normal_, withoutInit } from '../nn/init.ts';
import { Dropout, Embedding, LayerNorm, Linear, RMSNorm, SwiGLU, sinusoidalTable } from '../nn/layers.ts';
import { RotaryEmbedding } from '../nn/rotary.ts';
import { Module, ModuleList } from '../nn/module.ts';
import { shapeToString } from '../tensor/shape.ts';
import { Tensor } from '../tensor/tensor.ts';
import { upload } from '../ops/util.ts';
import type { QuantDType } from '../ops/matmul.ts';
import { checkpoint } from '../autograd/checkpoint.ts';
import { noGrad } from '../autograd/grad-mode.ts';
import type { GPTActivation, GPTConfig } from './gpt-config.ts';
import { copyHfTensor, gptConfigFromHf, planHfGpt2Load } from './hf/gpt2.ts';

/** A checkpoint's tensors by name and shape, each decoded on demand (`read`, called once per tensor). */
export interface HfTensorSource {
  /** Every tensor of the checkpoint, read or not. */
  entries: readonly {
    /** The checkpoint's name for it, e.g. `h.0.attn.c_attn.weight`. */
    name: string;
    /** Its shape as stored. */
    shape: readonly number[];
  }[];
  /** The tensor of that name, decoded from the file (float32). */
  read(name: string): Tensor;
}

function isTensorSource(x: unknown): x is HfTensorSource {
  return (
    typeof x === 'object' &&
    x !== null &&
    Array.isArray((x as HfTensorSource).entries) &&
    typeof (x as HfTensorSource).read === 'function'
  );
}

/** Everything that defines a GPT; saved as config.json beside the weights. */
export type { GPTActivation, GPTConfig } from './gpt-config.ts';

/** GPT-2 "small" (124M): 124,439,808 parameters, as Hugging Face's `gpt2`. Too big to train on a CPU. */
export const GPT2_124M: GPTConfig = {
  vocabSize: 50257,
  blockSize: 1024,
  nLayer: 12,
  nHead: 12,
  nEmbd: 768,
  dropout: 0.1,
  positions: 'learned',
  activation: 'gelu_tanh',
  layerNormEps: 1e-5,
};

/** Seconds per step on a CPU: smoke tests and CLI tests (the vocabulary is set from the tokenizer). */
export const GPT_TINY: GPTConfig = {
  vocabSize: 256,
  blockSize: 64,
  nLayer: 2,
  nHead: 2,
  nEmbd: 64,
  dropout: 0,
  positions: 'learned',
};

/** A character-level model of Multi30K's English captions that a 2-core CPU trains in under an hour. */
export const GPT_SMALL: GPTConfig = {
  vocabSize: 256,
  blockSize: 128,
  nLayer: 4,
  nHead: 4,
  nEmbd: 128,
  dropout: 0.1,
  positions: 'learned',
};

/**
 * Parameters of a GPT with this config, without building it: GPT-2's 12·E² + 13·E per block plus the tables, or
 * what the decoder switches make of it (grouped KV heads, a gated MLP, RMS norms, an untied head).
 */
export function gptParameterCount(c: GPTConfig): number {
  const E = c.nEmbd;
  const dK = c.headDim ?? E / c.nHead;
  const hKV = c.nKVHead ?? c.nHead;
  const F = c.dFf ?? 4 * E;
  const normP = c.norm === 'rms' ? E : 2 * E;
  const qkv = (c.nHead + 2 * hKV) * dK;
  const attn = qkv * E + ((c.qkvBias ?? true) ? qkv : 0) + c.nHead * dK * E + ((c.outBias ?? true) ? E : 0);
  const mlpBias = c.mlpBias ?? true;
  const mlp = c.mlp === 'swiglu' ? 3 * E * F + (mlpBias ? 2 * F + E : 0) : 2 * E * F + (mlpBias ? F + E : 0);
  const head = (c.tiedHead ?? true) ? 0 : c.vocabSize * E;
  return (
    c.vocabSize * E +
    (c.positions === 'learned' ? c.blockSize * E : 0) +
    c.nLayer * (2 * normP + attn + mlp) +
    normP +
    head
  );
}

/** The rotary tables (T, headDim/2) of the positions a call feeds, made once per call for every block. */
export interface RopeTables {
  cos: Tensor;
  sin: Tensor;
}

/**
 * The KV cache of incremental decoding: per block, the keys and values (B, nHead, t, headDim) of
 * every position fed so far. Made by `GPT.initCache`, grown by `GPT.forwardCached`.
 */
export class GPTCache {
  /** One entry per block: keys and values (B, nHead, t, headDim); null until the first forwardCached. */
  readonly layers: KeyValueCache[];
  /** Positions fed so far (t): the position of the next token. */
  length = 0;

  constructor(numLayers: number) {
    this.layers = Array.from({ length: numLayers }, () => ({ k: null, v: null }));
  }

  /**
   * From now on keep the keys and values in storage the cache owns: under the wasm backend, wasm memory, read
   * in place by the attention kernels and outside any memoryScope, so each decoding step can run in one
   * (generateStream does); a step's old keys/values are freed when it appends. Call {@link release} when
   * decoding ends (else the storage is freed once the cache is collected). Returns this.
   */
  ownStorage(): this {
    ownLayers(this, this.layers);
    return this;
  }

  /** Keep the first `length` positions only (HF's `DynamicCache.crop`): the next token fed is at `length`. */
  crop(length: number): this {
    if (!Number.isInteger(length) || length < 0 || length > this.length)
      throw new Error(`GPTCache.crop: length must be an integer in [0, ${this.length}], got ${length}`);
    for (const l of this.layers) cropKeysValues(l, length);
    this.length = length;
    return this;
  }

  /** Free the storage ownStorage() made the cache's; the cache cannot be used afterwards. */
  release(): void {
    releaseOwnedLayers(this, this.layers);
    for (const l of this.layers) {
      l.k = null;
      l.v = null;
    }
    this.length = 0;
  }
}

/** The position-wise feed-forward block: GELU(x·W_fc + b)·W_proj + b, then dropout. */
export class MLP extends Module {
  /** `c_fc`: nEmbd → 4·nEmbd, the expansion (the paper's d_ff = 4·d_model). */
  readonly fc: Linear;
  /** `c_proj`: 4·nEmbd → nEmbd, back to the residual stream. */
  readonly proj: Linear;
  /** Dropout on the output, before it joins the residual stream. */
  readonly dropout: Dropout;
  /** Which GELU: the exact erf form or GPT-2's tanh approximation. */
  readonly activation: GPTActivation;

  constructor(nEmbd: number, dropout: number, activation: GPTActivation = 'gelu') {
    super();
    this.activation = activation;
    this.fc = this.registerModule('c_fc', new Linear(nEmbd, 4 * nEmbd));
    this.proj = this.registerModule('c_proj', new Linear(4 * nEmbd, nEmbd));
    this.dropout = this.registerModule('dropout', new Dropout(dropout));
  }

  /** x (B, T, nEmbd) → (B, T, nEmbd), each position on its own. */
  forward(x: Tensor): Tensor {
    return this.dropout.forward(
      this.proj.forward(F.gelu(this.fc.forward(x), this.activation === 'gelu_tanh' ? 'tanh' : 'none')),
    );
  }
}

/** The norm of a block and of the model's end: GPT-2's LayerNorm, or Llama's RMSNorm (config.norm 'rms'). */
function makeNorm(c: GPTConfig): LayerNorm | RMSNorm {
  const eps = c.layerNormEps ?? 1e-5;
  return c.norm === 'rms' ? new RMSNorm(c.nEmbd, { eps }) : new LayerNorm(c.nEmbd, { eps });
}

/**
 * One pre-norm block (GPT-2): x + attn(ln_1(x)), then x + mlp(ln_2(x)). Today's decoders are the same block with
 * switches (config): RMS norms, rotary positions on the queries and keys, grouped KV heads, a gated MLP.
 */
export class Block extends Module {
  /** `ln_1`: the norm before attention (pre-norm, GPT-2's departure from the paper's post-norm). */
  readonly ln1: LayerNorm | RMSNorm;
  /** Causal self-attention, nHead heads (nKVHead key/value heads), torch.nn.MultiheadAttention's layout. */
  readonly attn: MultiheadAttention;
  /** `ln_2`: the norm before the MLP. */
  readonly ln2: LayerNorm | RMSNorm;
  /** The position-wise feed-forward block: GPT-2's, or the gated SwiGLU. */
  readonly mlp: MLP | SwiGLU;
  /** Dropout on the attention output before it joins the residual stream. */
  readonly residDropout: Dropout;
  /** Sliding-window attention in this block: query i sees keys j with i − j < window (null: all). */
  readonly window: number | null;

  constructor(c: GPTConfig, layer = 0) {
    super();
    this.ln1 = this.registerModule('ln_1', makeNorm(c));
    this.attn = this.registerModule(
      'attn',
      new MultiheadAttention(c.nEmbd, c.nHead, {
        dropout: c.dropout,
        batchFirst: true,
        numKVHeads: c.nKVHead,
        headDim: c.headDim,
        bias: c.qkvBias ?? true,
        outBias: c.outBias ?? true,
      }),
    );
    this.ln2 = this.registerModule('ln_2', makeNorm(c));
    this.mlp = this.registerModule(
      'mlp',
      c.mlp === 'swiglu'
        ? new SwiGLU(c.nEmbd, c.dFf ?? 4 * c.nEmbd, { bias: c.mlpBias ?? true })
        : new MLP(c.nEmbd, c.dropout, c.activation),
    );
    this.residDropout = this.registerModule('resid_dropout', new Dropout(c.dropout));
    const sliding = c.slidingWindow !== undefined && (c.slidingLayers?.includes(layer) ?? true);
    this.window = sliding ? c.slidingWindow! : null;
  }

  /** x (B, T, nEmbd); position i attends to positions 0..i only; `rope`: the tables of positions 0..T−1. */
  forward(x: Tensor, rope: RopeTables | null = null): Tensor {
    const h = this.ln1.forward(x);
    let output: Tensor;
    if (rope || this.window !== null) {
      const { q, k, v } = this.projectRotated(h, rope);
      const T = x.shape[1];
      output = this.attn.attendProjected(q, k, v, { isCausal: true, attnBias: this.windowBias(T, T) }).output;
    } else output = this.attn.forward(h, h, h, { isCausal: true, needWeights: false }).output;
    x = F.add(x, this.residDropout.forward(output));
    return F.add(x, this.mlp.forward(this.ln2.forward(x)));
  }

  /** q (B, h, L, dK), k and v (B, hKV, L, dK) of h (B, L, nEmbd), queries and keys turned by `rope` when given. */
  private projectRotated(h: Tensor, rope: RopeTables | null): { q: Tensor; k: Tensor; v: Tensor } {
    const { q, k, v } = this.attn.projectSelf(h);
    if (!rope) return { q, k, v };
    return { q: F.rotaryEmbedding(q, rope.cos, rope.sin), k: F.rotaryEmbedding(k, rope.cos, rope.sin), v };
  }

  /**
   * The sliding window as an additive bias (L, S): −∞ where key j is `window` or more positions before query i
   * (the last L of S positions), as transformers' sliding_window_overlay (kv_idx > q_idx − window); null when the
   * block has no window or every key is within it. Public for viz/flow-gpt.ts, which composes the block's pass.
   */
  windowBias(L: number, S: number): Tensor | null {
    const w = this.window;
    if (w === null || S <= w) return null;
    const d = new Float32Array(L * S);
    for (let i = 0; i < L; i++) {
      const qi = S - L + i;
      for (let j = 0; j <= qi - w; j++) d[i * S + j] = -Infinity;
    }
    return upload(d, [L, S]);
  }

  /**
   * The same for L new positions x (B, L, nEmbd) that follow the t cached ones: only the new
   * positions are projected; their keys/values join the cache; they attend to every cached
   * position and causally among themselves. With needWeights, also the attention (B, h, L, t + L).
   */
  forwardCached(
    x: Tensor,
    cache: KeyValueCache,
    needWeights = false,
    rope: RopeTables | null = null,
  ): {
    /** The block's output for the new positions, (B, L, nEmbd). */
    output: Tensor;
    /** Attention weights (B, nHead, L, t + L) with needWeights, else null. */
    weights: Tensor | null;
  } {
    const L = x.shape[1];
    // Keys are cached turned by their positions' angles (rotary), so a step turns only its own.
    const { q, k, v } = this.projectRotated(this.ln1.forward(x), rope);
    appendKeysValues(cache, k, v);
    const S = cache.k!.shape[2];
    const r = this.attn.attendProjected(q, cache.k!, cache.v!, {
      isCausal: L > 1,
      needWeights,
      attnBias: this.windowBias(L, S),
    });
    x = F.add(x, this.residDropout.forward(r.output));
    return { output: F.add(x, this.mlp.forward(this.ln2.forward(x))), weights: r.weights };
  }
}

/**
 * The GPT: token (and position) embedding, nLayer {@link Block}s, a final LayerNorm and the tied
 * output projection (see the file comment for the state-dict names).
 */
export class GPT extends Module {
  /** The config it was built from (saved as config.json beside the weights). */
  readonly config: GPTConfig;
  /** Token embedding, also the output projection. */
  readonly wte: Embedding;
  /** Learned position table (positions 'learned'), else null. */
  readonly wpe: Embedding | null;
  /** Fixed sinusoid table (positions 'sinusoidal'): a buffer, not saved. */
  readonly pe: Tensor | null;
  /** Dropout on the embeddings (token + position). */
  readonly drop: Dropout;
  /** The blocks, `h.0` .. `h.{nLayer−1}`. */
  readonly h: ModuleList<Block>;
  /** `ln_f`: the norm after the last block (pre-norm leaves the stream unnormalised). */
  readonly lnF: LayerNorm | RMSNorm;
  /** `lm_head`: the output projection when it is not tied to wte (config.tiedHead false), else null. */
  readonly lmHead: Linear | null;
  /** positions 'rotary': the rotary embedding of every block's queries and keys (no parameters), else null. */
  readonly rope: RotaryEmbedding | null;
  /**
   * Recompute each block's activations in the backward pass instead of keeping them (autograd/checkpoint.ts;
   * transformers' gradient_checkpointing): a training step holds the blocks' inputs, not their insides, for one
   * more forward per block. The gradients are the same. Off by default; only forward() under recording uses it.
   */
  recompute = false;

  /**
   * options.init false skips every random initialisation, GPT-2's and the layers' own (weights stay 0/1, built
   * through nn/init's withoutInit): for a model about to be loaded, which then never writes its float32 weights
   * before the loaded ones (a quantized folder's model never holds them).
   */
  constructor(config: GPTConfig, options: { init?: boolean } = {}) {
    super();
    checkConfig(config);
    this.config = { ...config };
    const c = this.config;
    const init = options.init ?? true;
    const build = <T>(f: () => T): T => (init ? f() : withoutInit(f));
    this.wte = this.registerModule(
      'wte',
      build(() => new Embedding(c.vocabSize, c.nEmbd)),
    );
    this.wpe =
      c.positions === 'learned'
        ? this.registerModule(
            'wpe',
            build(() => new Embedding(c.blockSize, c.nEmbd)),
          )
        : null;
    this.pe =
      c.positions === 'sinusoidal' ? this.registerBuffer('pe', sinusoidalTable(c.blockSize, c.nEmbd), false) : null;
    this.drop = this.registerModule('drop', new Dropout(c.dropout));
    this.h = this.registerModule(
      'h',
      new ModuleList(Array.from({ length: c.nLayer }, (_, i) => build(() => new Block(c, i)))),
    );
    this.lnF = this.registerModule('ln_f', makeNorm(c));
    this.lmHead =
      (c.tiedHead ?? true)
        ? null
        : this.registerModule(
            'lm_head',
            build(() => new Linear(c.nEmbd, c.vocabSize, { bias: false })),
          );
    this.rope =
      c.positions === 'rotary'
        ? new RotaryEmbedding(c.headDim ?? c.nEmbd / c.nHead, { base: c.rope?.base, scaling: c.rope?.scaling })
        : null;
    if (init) this.initWeights();
  }

  /**
   * A Hugging Face GPT-2 checkpoint (gpt2, distilgpt2, gpt2-medium, ...) as a qkv GPT in eval mode:
   * its config.json (object) and its tensors by HF name, either all decoded (`Record<string, Tensor>`)
   * or as a list with a reader called once per tensor (so a large file is never decoded whole).
   * Names and layouts are mapped by `hf/gpt2.ts`; a config or tensor that is not GPT-2's is refused
   * in one line naming it. On disk: `io.readHfGpt2(configJson, bytes)`, or the CLI's `--model DIR`.
   */
  static fromHuggingFace(config: unknown, tensors: Record<string, Tensor> | HfTensorSource): GPT {
    const source: HfTensorSource = isTensorSource(tensors)
      ? tensors
      : {
          entries: Object.entries(tensors).map(([name, t]) => ({ name, shape: t.shape })),
          read: (name) => tensors[name],
        };
    const model = new GPT(gptConfigFromHf(config), { init: false });
    const own = model.stateDict();
    noGrad(() => {
      for (const step of planHfGpt2Load(source.entries, own))
        copyHfTensor(own[step.target.name], source.read(step.hfName), step.target.transpose);
    });
    return model.eval();
  }

  /**
   * GPT-2's initialisation: every weight matrix and table N(0, 0.02), biases zero, and the two
   * projections that write into the residual stream (attn.out_proj, mlp.c_proj) N(0, 0.02/√(2·nLayer)),
   * so the stream's variance does not grow with depth.
   */
  private initWeights(): void {
    const residStd = 0.02 / Math.sqrt(2 * this.config.nLayer);
    for (const [name, p] of this.namedParameters()) {
      if (name.endsWith('bias')) constant_(p, 0);
      else if (name.startsWith('ln_') || name.includes('.ln_')) constant_(p, 1);
      else if (name.endsWith('out_proj.weight') || name.endsWith('c_proj.weight') || name.endsWith('down_proj.weight'))
        normal_(p, 0, residStd);
      else normal_(p, 0, 0.02);
    }
  }

  /** ids (B, T) -> (B, T, nEmbd): token embedding + the embedding of positions offset..offset+T−1, then dropout. */
  embed(ids: Tensor, offset = 0): Tensor {
    const T = ids.shape[1];
    const B = this.config.blockSize;
    if (!Number.isInteger(offset) || offset < 0 || offset + T > B) {
      throw new Error(`GPT: positions ${offset}..${offset + T - 1} exceed the context of blockSize ${B}`);
    }
    let pos: Tensor;
    if (this.rope) return this.drop.forward(this.wte.forward(ids)); // rotary: positions enter in attention
    if (this.wpe) {
      pos = this.wpe.forward(
        new Tensor(
          Int32Array.from({ length: T }, (_, i) => offset + i),
          [T],
          'int32',
        ),
      );
    } else {
      pos = F.narrow(this.pe!, 0, offset, T); // rows offset..offset+T-1 of the table, on its device
    }
    return this.drop.forward(F.add(this.wte.forward(ids), pos));
  }

  /**
   * quantize()'s tables when not told: q4 in a q4 Llama-family model (RMS norms) whose head is tied (SmolLM2,
   * Llama 3.2 1B): there the table is also the output projection, the largest matrix of a small model, and q4
   * like every other weight (4.5 bits a weight in all: issue 58); else int8 (GPT-2-style models, as
   * records/quantized measured them; an untied model's table is only gathered).
   */
  protected override defaultTables(dtype: QuantDType): QuantDType | 'float32' {
    return dtype === 'q4' && this.lmHead === null && this.config.norm === 'rms' ? 'q4' : 'int8';
  }

  /** Logits over the vocabulary: h·wteᵀ with the tied matrix, else lm_head. */
  head(h: Tensor): Tensor {
    const x = this.lnF.forward(h);
    return this.lmHead ? this.lmHead.forward(x) : this.wte.attend(x);
  }

  /** The rotary tables of positions offset .. offset + T − 1 (null without rotary positions). */
  private ropeTables(offset: number, T: number): RopeTables | null {
    return this.rope ? this.rope.tables(offset, T) : null;
  }

  /** Next-token logits (B, T, vocabSize) for ids (B, T): row t depends on ids[:, 0..t] only. */
  forward(ids: Tensor): Tensor {
    this.checkIds(ids, 'ids');
    let x = this.embed(ids);
    const rope = this.ropeTables(0, ids.shape[1]);
    for (const block of this.h)
      x = this.recompute ? checkpoint((y) => block.forward(y, rope), x, block.parameters()) : block.forward(x, rope);
    return this.head(x);
  }

  /** An empty KV cache for incremental decoding. */
  initCache(): GPTCache {
    return new GPTCache(this.config.nLayer);
  }

  /**
   * Incremental decoding: logits (B, L, vocabSize) for L new ids (B, L) at positions
   * cache.length .. cache.length + L − 1, attending to everything cached; the cache grows by L.
   * Equal to the matching rows of forward() over the whole sequence. Feed the prompt in one call
   * (prefill), then one id per call. With needWeights, per block the attention (B, nHead, L, t + L).
   */
  forwardCached(
    ids: Tensor,
    cache: GPTCache,
    options: { needWeights?: boolean } = {},
  ): {
    /** Next-token logits of the new positions, (B, L, vocabSize). */
    logits: Tensor;
    /** With needWeights, per block the attention (B, nHead, L, t + L); else null. */
    weights: Tensor[] | null;
  } {
    this.checkIds(ids, 'ids');
    if (cache.layers.length !== this.config.nLayer)
      throw new Error(`GPT: cache has ${cache.layers.length} layers, the model ${this.config.nLayer}`);
    let x = this.embed(ids, cache.length);
    const rope = this.ropeTables(cache.length, ids.shape[1]);
    const weights: Tensor[] = [];
    let i = 0;
    for (const block of this.h) {
      const r = block.forwardCached(x, cache.layers[i++], options.needWeights, rope);
      x = r.output;
      if (r.weights) weights.push(r.weights);
    }
    cache.length += ids.shape[1];
    return { logits: this.head(x), weights: options.needWeights ? weights : null };
  }

  private checkIds(ids: Tensor, arg: string): void {
    if (ids.dtype !== 'int32' || ids.ndim !== 2 || ids.shape[1] < 1) {
      throw new Error(
        `GPT: ${arg} must be int32 token ids of shape (B, T), got ${ids.dtype} ${shapeToString(ids.shape)}`,
      );
    }
  }
}

function checkConfig(c: GPTConfig): void {
  for (const k of ['vocabSize', 'blockSize', 'nLayer', 'nHead', 'nEmbd'] as const) {
    if (!Number.isInteger(c[k]) || c[k] <= 0)
      throw new Error(`GPT: config.${k} must be a positive integer, got ${c[k]}`);
  }
  if (c.headDim === undefined && c.nEmbd % c.nHead !== 0)
    throw new Error(`GPT: nEmbd ${c.nEmbd} is not divisible by nHead ${c.nHead}`);
  for (const k of ['dFf', 'nKVHead', 'headDim', 'slidingWindow'] as const) {
    if (c[k] !== undefined && (!Number.isInteger(c[k]) || c[k] <= 0))
      throw new Error(`GPT: config.${k} must be a positive integer, got ${c[k]}`);
  }
  if (c.nKVHead !== undefined && c.nHead % c.nKVHead !== 0)
    throw new Error(`GPT: nHead ${c.nHead} is not divisible by nKVHead ${c.nKVHead}`);
  if (c.norm !== undefined && c.norm !== 'layer' && c.norm !== 'rms')
    throw new Error(`GPT: norm must be 'layer' or 'rms', got '${String(c.norm)}'`);
  if (c.mlp !== undefined && c.mlp !== 'gelu' && c.mlp !== 'swiglu')
    throw new Error(`GPT: mlp must be 'gelu' or 'swiglu', got '${String(c.mlp)}'`);
  if (!(c.dropout >= 0 && c.dropout < 1)) throw new Error(`GPT: dropout must be in [0, 1), got ${c.dropout}`);
  if (c.positions !== 'learned' && c.positions !== 'sinusoidal' && c.positions !== 'rotary')
    throw new Error(`GPT: positions must be 'learned', 'sinusoidal' or 'rotary', got '${String(c.positions)}'`);
  if (c.activation !== undefined && c.activation !== 'gelu' && c.activation !== 'gelu_tanh')
    throw new Error(`GPT: activation must be 'gelu' or 'gelu_tanh', got '${String(c.activation)}'`);
  if (c.layerNormEps !== undefined && !(c.layerNormEps > 0 && c.layerNormEps < 1))
    throw new Error(`GPT: layerNormEps must be in (0, 1), got ${c.layerNormEps}`);
}
