/**
 * torch.nn.MultiheadAttention (over 500 lines: one module with its packed, grouped-query and separate q/k/v
 * projections, the KV-cache paths and the LoRA adapters on them, which share the projection helpers).
 */
import { alignBias, attentionCore, maskToBias } from '../ops/attention.ts';
import * as F from '../ops/index.ts';
import { linearRows } from '../ops/matmul.ts';
import { shapeToString } from '../tensor/shape.ts';
import { type Tensor, full, zeros } from '../tensor/tensor.ts';
import { constant_, xavierUniform_ } from './init.ts';
import { noGrad } from '../autograd/grad-mode.ts';
import { checkPositiveInt, Linear, mergeInto } from './layers.ts';
import { LoraLinear, type LoraOptions } from './lora.ts';
import { Module, type QuantizeOptions } from './module.ts';

/** Options of {@link MultiheadAttention}'s constructor, torch's names. */
export interface MultiheadAttentionOptions {
  /** Dropout on the attention weights during training. */
  dropout?: number;
  /** Biases on the input and output projections. */
  bias?: boolean;
  /** Key feature size, when keys are not embedDim wide (cross-attention from another space). */
  kdim?: number;
  /** Value feature size. */
  vdim?: number;
  /** Inputs and outputs are (N, L, E) instead of torch's default (L, N, E). */
  batchFirst?: boolean;
  /**
   * Key/value heads (grouped-query attention, Ainslie et al. 2023; default numHeads, multi-head attention): each
   * is shared by numHeads / numKVHeads query heads, read in place by the attention kernel, never copied per
   * query head; the KV cache holds only these. 1 is multi-query attention (Shazeer 2019). Packed form only.
   */
  numKVHeads?: number;
  /** Each head's width dK (default embedDim / numHeads; Llama-family configs may set head_dim). Packed form only. */
  headDim?: number;
  /** A bias on the output projection (default: `bias`); Qwen2 has q/k/v biases and none on o_proj. */
  outBias?: boolean;
}

/** Options of {@link MultiheadAttention.forward}: the masks, and what to return. */
export interface MultiheadAttentionForwardOptions {
  /** (N, S): TRUE = this key is padding and is ignored; or float, added to the scores. */
  keyPaddingMask?: Tensor | null;
  /** (L, S), (N·numHeads, L, S) or (N or 1, numHeads, L, S): TRUE = attention NOT allowed; or float, added. */
  attnMask?: Tensor | null;
  /** Return the attention weights (default true, as torch). */
  needWeights?: boolean;
  /** Average weights over heads -> (N, L, S); false gives (N, numHeads, L, S). Default true. */
  averageAttnWeights?: boolean;
  /** Apply the causal mask (query i sees keys <= i). */
  isCausal?: boolean;
}

/**
 * Multi-head attention (§3.2.2): h heads of scaled dot-product attention over learned projections,
 * concatenated and projected: MultiHead(Q, K, V) = Concat(head_1..head_h)·Wᴼ.
 * Parameters and their names are torch.nn.MultiheadAttention's: `in_proj_weight` (3E, E) and
 * `in_proj_bias` (3E) when q/k/v share E, else `q_proj_weight`, `k_proj_weight`, `v_proj_weight`;
 * `out_proj.weight`, `out_proj.bias`. Masks use torch.nn's convention: TRUE means "blocked".
 *
 * Grouped-query attention (numKVHeads < numHeads, the decoders of Llama, Qwen2, Mistral) keeps the packed
 * layout with fewer key and value rows: in_proj_weight ((h + 2·hKV)·dK, E) = [W^Q; W^K; W^V] and out_proj
 * (E, h·dK).
 */
/** Which rows of the packed in_proj_weight [q; k; v] a LoRA pair adapts: one projection, or all three. */
export type InProjPart = 'q' | 'k' | 'v' | 'qkv';

const PART_INDEX: Record<InProjPart, [first: number, count: number]> = { q: [0, 1], k: [1, 1], v: [2, 1], qkv: [0, 3] };

export class MultiheadAttention extends Module {
  /** dK = dV, each head's width: embedDim / numHeads unless given. */
  readonly headDim: number;
  /** Key/value heads, each read by numHeads / numKVHeads query heads (numHeads: multi-head attention). */
  readonly numKVHeads: number;
  /** Key feature size (embedDim unless given). */
  readonly kdim: number;
  /** Value feature size (embedDim unless given). */
  readonly vdim: number;
  /** Inputs and outputs are (N, L, E) rather than (L, N, E). */
  readonly batchFirst: boolean;
  /** Dropout probability on the attention weights in training. */
  readonly dropout: number;
  /**
   * W^Q, W^K, W^V stacked (3E, E), `in_proj_weight`, when kdim = vdim = E; else null. After `quantize()`, its
   * int8 or q4 values, with their scales in {@link inProjScale}.
   */
  inProjWeight: Tensor | null;
  /** The quantized in_proj_weight's float32 scales, `in_proj_weight_scale` (3E, 1) or (3E, E/32); else null. */
  inProjScale: Tensor | null = null;
  /**
   * The quantized in_proj_weight's product: false, the int8/q4 kernels (inference, no gradient); true, x·dequant(W)ᵀ
   * in float32 with the gradient to x (QLoRA training: nn/qlora.ts). The output projection is a Linear with its own.
   */
  computeDequantized = false;
  /** W^Q (E, E), `q_proj_weight`, when kdim or vdim differs from E; else null. */
  readonly qProjWeight: Tensor | null;
  /** W^K (E, kdim), `k_proj_weight`, when kdim or vdim differs from E; else null. */
  readonly kProjWeight: Tensor | null;
  /** W^V (E, vdim), `v_proj_weight`, when kdim or vdim differs from E; else null. */
  readonly vProjWeight: Tensor | null;
  /** The three projections' biases (3E), `in_proj_bias`; null with `bias: false`. */
  readonly inProjBias: Tensor | null;
  /** W^O, the output projection (E, E), `out_proj`. */
  readonly outProj: Linear;

  constructor(
    /** E, the model width (dModel): queries' feature size and the output's. */
    readonly embedDim: number,
    /** h, the number of heads; must divide embedDim. */
    readonly numHeads: number,
    options: MultiheadAttentionOptions = {},
  ) {
    super();
    checkPositiveInt('MultiheadAttention', 'embedDim', embedDim);
    checkPositiveInt('MultiheadAttention', 'numHeads', numHeads);
    if (options.headDim === undefined && embedDim % numHeads !== 0) {
      throw new Error(`MultiheadAttention: embedDim ${embedDim} is not divisible by numHeads ${numHeads}`);
    }
    this.headDim = options.headDim ?? embedDim / numHeads;
    this.numKVHeads = options.numKVHeads ?? numHeads;
    checkPositiveInt('MultiheadAttention', 'headDim', this.headDim);
    checkPositiveInt('MultiheadAttention', 'numKVHeads', this.numKVHeads);
    if (numHeads % this.numKVHeads !== 0)
      throw new Error(`MultiheadAttention: numHeads ${numHeads} is not divisible by numKVHeads ${this.numKVHeads}`);
    this.kdim = options.kdim ?? embedDim;
    this.vdim = options.vdim ?? embedDim;
    checkPositiveInt('MultiheadAttention', 'kdim', this.kdim);
    checkPositiveInt('MultiheadAttention', 'vdim', this.vdim);
    this.batchFirst = options.batchFirst ?? false;
    this.dropout = options.dropout ?? 0;
    const bias = options.bias ?? true;
    const E = embedDim;
    const packed = this.kdim === E && this.vdim === E;
    if (!packed && (this.numKVHeads !== numHeads || this.headDim * numHeads !== E))
      throw new Error('MultiheadAttention: numKVHeads and headDim need kdim = vdim = embedDim (the packed in_proj)');
    const rows = (numHeads + 2 * this.numKVHeads) * this.headDim;
    if (packed) {
      this.inProjWeight = this.registerParameter('in_proj_weight', xavierUniform_(zeros(rows, E)));
      this.qProjWeight = this.kProjWeight = this.vProjWeight = null;
    } else {
      this.inProjWeight = null;
      this.qProjWeight = this.registerParameter('q_proj_weight', xavierUniform_(zeros(E, E)));
      this.kProjWeight = this.registerParameter('k_proj_weight', xavierUniform_(zeros(E, this.kdim)));
      this.vProjWeight = this.registerParameter('v_proj_weight', xavierUniform_(zeros(E, this.vdim)));
    }
    this.inProjBias = bias ? this.registerParameter('in_proj_bias', full([rows], 0)) : null;
    this.outProj = this.registerModule(
      'out_proj',
      new Linear(numHeads * this.headDim, E, { bias: options.outBias ?? bias }),
    );
    if (this.outProj.bias) constant_(this.outProj.bias, 0);
  }

  /**
   * query (L, N, E), key (S, N, kdim), value (S, N, vdim) — or (N, L, E) etc. with batchFirst, or
   * unbatched (L, E). Returns the output in the query's layout and, if asked, the weights.
   */
  forward(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    options: MultiheadAttentionForwardOptions = {},
  ): {
    /** The attention output, in the query's layout with E features. */
    output: Tensor;
    /** The attention weights (N, L, S) averaged over heads, or (N, h, L, S); null unless needWeights. */
    weights: Tensor | null;
  } {
    const {
      keyPaddingMask = null,
      attnMask = null,
      needWeights = true,
      averageAttnWeights = true,
      isCausal = false,
    } = options;
    const E = this.embedDim;
    const h = this.numHeads;
    const name = 'MultiheadAttention';
    const batched = query.ndim === 3;
    if (query.ndim !== 2 && query.ndim !== 3) {
      throw new Error(
        `${name}: query must be 3-D (batched) or 2-D (unbatched), got shape ${shapeToString(query.shape)}`,
      );
    }
    for (const [arg, t] of [
      ['key', key],
      ['value', value],
    ] as const) {
      if (t.ndim !== query.ndim) {
        throw new Error(`${name}: ${arg} must be ${query.ndim}-D like query, got shape ${shapeToString(t.shape)}`);
      }
    }
    const selfAttention = query === key && key === value;
    // Work batch-first: (N, L, E).
    const toBF = (t: Tensor): Tensor => (!batched ? t.unsqueeze(0) : this.batchFirst ? t : F.transpose(t, 0, 1));
    const q0 = toBF(query);
    const k0 = selfAttention ? q0 : toBF(key);
    const v0 = selfAttention ? q0 : toBF(value);
    const [N, L, Eq] = q0.shape;
    const [Nk, S, Ek] = k0.shape;
    const [Nv, Sv, Ev] = v0.shape;
    if (Eq !== E)
      throw new Error(`${name}: query feature size must be embedDim ${E}, got shape ${shapeToString(query.shape)}`);
    if (Ek !== this.kdim)
      throw new Error(`${name}: key feature size must be kdim ${this.kdim}, got shape ${shapeToString(key.shape)}`);
    if (Ev !== this.vdim)
      throw new Error(`${name}: value feature size must be vdim ${this.vdim}, got shape ${shapeToString(value.shape)}`);
    if (Nk !== N || Nv !== N)
      throw new Error(
        `${name}: key and value batch size must match query's ${N}, got key ` +
          `${shapeToString(key.shape)}, value ${shapeToString(value.shape)}`,
      );
    if (Sv !== S)
      throw new Error(
        `${name}: key and value must have the same length, got key ` +
          `${shapeToString(key.shape)} and value ${shapeToString(value.shape)}`,
      );

    // Input projections (N, L, E), (N, S, E), (N, S, E).
    let q: Tensor;
    let k: Tensor;
    let v: Tensor;
    if (this.inProjWeight && selfAttention) {
      [q, k, v] = this.projectAll(q0); // one GEMM for all three: (N, L, (h + 2·hKV)·dK), split
    } else {
      q = this.projectPart(q0, 0);
      k = this.projectPart(k0, 1);
      v = this.projectPart(v0, 2);
    }
    // Split heads: (N, T, h·dK) -> (N, h, T, dK); keys and values have hKV heads.
    const dK = this.headDim;
    const hKV = this.numKVHeads;
    q = F.permute(q.reshape(N, L, h, dK), [0, 2, 1, 3]);
    k = F.permute(k.reshape(N, S, hKV, dK), [0, 2, 1, 3]);
    v = F.permute(v.reshape(N, S, hKV, dK), [0, 2, 1, 3]);

    const bias = this.buildBias(attnMask, keyPaddingMask, N, L, S, batched);
    const res = attentionCore(
      q,
      k,
      v,
      bias,
      {
        causal: isCausal && !attnMask,
        scale: 1 / Math.sqrt(dK),
        dropoutP: this.training ? this.dropout : 0,
        needWeights,
      },
      [N, h],
    );
    // Concatenate heads: (N, h, L, dK) -> (N, L, h·dK), then Wᴼ -> (N, L, E).
    let out = this.outProj.forward(F.permute(res.output, [0, 2, 1, 3]).reshape(N, L, h * dK));
    out = !batched ? out.reshape(L, E) : this.batchFirst ? out : F.transpose(out, 0, 1);
    let weights: Tensor | null = null;
    if (needWeights && res.weights) {
      weights = averageAttnWeights ? F.mean(res.weights, 1) : res.weights; // (N, L, S) or (N, h, L, S)
      if (!batched) weights = weights.reshape(weights.shape.slice(1));
    }
    return { output: out, weights };
  }

  /** Widths of the query, key and value projections: h·dK, hKV·dK, hKV·dK (each E in multi-head attention). */
  private partSizes(): number[] {
    const kv = this.numKVHeads * this.headDim;
    return [this.numHeads * this.headDim, kv, kv];
  }

  /**
   * LoRA pairs on the packed input projection (addInProjLora), by the rows they adapt: Hugging Face keeps q, k and
   * v as separate layers (Marian's q_proj, v_proj) or as one (GPT-2's c_attn), and PEFT adapts whichever it is told.
   */
  readonly inProjLora: Partial<Record<InProjPart, LoraLinear>> = {};

  /**
   * Attach a LoRA pair to rows of the packed in_proj_weight (`part`: 'q', 'k', 'v', or 'qkv' for all its rows:
   * q's are h·dK, k's and v's hKV·dK), registered as `lora_<part>`; every projection path (forward,
   * projectSelf/Query/KeyValue) adds its update.
   */
  addInProjLora(part: InProjPart, options: LoraOptions): LoraLinear {
    if (!this.inProjWeight)
      throw new Error('MultiheadAttention.addInProjLora: this attention has separate q/k/v weights (kdim/vdim ≠ E)');
    if (!Object.hasOwn(PART_INDEX, part))
      throw new Error(`MultiheadAttention.addInProjLora: part must be 'q', 'k', 'v' or 'qkv', got ${String(part)}`);
    const taken = Object.keys(this.inProjLora) as InProjPart[];
    if (taken.some((t) => t === part || t === 'qkv' || part === 'qkv'))
      throw new Error(
        `MultiheadAttention.addInProjLora: rows of '${part}' already have an adapter (${taken.join(', ')})`,
      );
    const lora = new LoraLinear(this.embedDim, this.partRows(part)[1], options);
    this.inProjLora[part] = this.registerModule(`lora_${part}`, lora);
    return lora;
  }

  /** Drop the in_proj adapters; with `merge`, first add each ΔW into its rows of in_proj_weight (float only). */
  removeInProjLora(merge: boolean): void {
    for (const [part, lora] of Object.entries(this.inProjLora) as [InProjPart, LoraLinear][]) {
      if (merge) {
        if (this.inProjScale)
          throw new Error('MultiheadAttention.removeInProjLora: cannot merge an adapter into a quantized weight');
        mergeInto(
          this.inProjWeight!,
          noGrad(() => lora.deltaWeight()),
          this.partRows(part)[0],
        );
      }
      this.removeModule(`lora_${part}`);
      delete this.inProjLora[part];
    }
  }

  /**
   * q (N, T, h·dK), k, v (N, T, hKV·dK) of x (N, T, E) in one GEMM, with the adapters' updates (an all-rows one
   * before the split).
   */
  private projectAll(x: Tensor): Tensor[] {
    let y = this.inProject(x, 0, 3); // (N, T, (h + 2·hKV)·dK)
    const all = this.inProjLora.qkv;
    if (all) y = F.add(y, all.forward(x));
    const parts = F.split(y, this.partSizes(), -1); // q, k, v
    return parts.map((p, i) => {
      const lora = this.inProjLora[(['q', 'k', 'v'] as const)[i]];
      return lora ? F.add(p, lora.forward(x)) : p;
    });
  }

  /** Projection i's LoRA update of x (N, T, E): its own adapter's, or its rows of an all-rows one; null: none. */
  private partLora(x: Tensor, i: 0 | 1 | 2): Tensor | null {
    const own = this.inProjLora[(['q', 'k', 'v'] as const)[i]];
    if (own) return own.forward(x);
    const all = this.inProjLora.qkv;
    if (!all) return null;
    const sizes = this.partSizes();
    return all.forwardRows(x, i === 0 ? 0 : sizes[0] + (i - 1) * sizes[1], sizes[i]);
  }

  /**
   * The first row and the row count of `part` in the packed in_proj_weight: q h·dK rows, k and v hKV·dK each
   * (grouped-query attention: fewer key and value rows than query rows).
   */
  private partRows(part: InProjPart): [start: number, count: number] {
    const sizes = this.partSizes();
    const [first, n] = PART_INDEX[part];
    const start = sizes.slice(0, first).reduce((a, b) => a + b, 0);
    return [start, sizes.slice(first, first + n).reduce((a, b) => a + b, 0)];
  }

  /**
   * x (..., E) through the rows of parts [i, i + n) of the packed in_proj_weight and in_proj_bias (0 query,
   * 1 key, 2 value; n = 3: all three projections in one GEMM), float or quantized.
   */
  private inProject(x: Tensor, i: number, n: number): Tensor {
    const sizes = this.partSizes();
    const start = sizes.slice(0, i).reduce((a, b) => a + b, 0);
    const count = sizes.slice(i, i + n).reduce((a, b) => a + b, 0);
    const W = this.inProjWeight!;
    if (this.inProjScale) {
      const b = this.inProjBias && n < 3 ? F.narrow(this.inProjBias, 0, start, count) : this.inProjBias;
      const p = n < 3 ? F.quantizedRows(W, this.inProjScale, start, count) : { values: W, scale: this.inProjScale };
      return this.computeDequantized
        ? F.linearDequantized(x, p.values, p.scale, b)
        : F.linearQuantized(x, p.values, p.scale, b);
    }
    return n < 3 ? linearRows(x, W, this.inProjBias, start, count) : F.linear(x, W, this.inProjBias);
  }

  /**
   * The packed in_proj_weight as a quantized pair in `dtype` (Module.quantize); the separate q/k/v weights of
   * kdim or vdim ≠ E stay float. The output projection is an nn.Linear and quantizes itself.
   */
  override quantizeOwn(o: Required<QuantizeOptions>): void {
    if (!this.inProjWeight || this.inProjScale) return;
    const { values, scale } = F.quantizeWeight(this.inProjWeight, o.dtype, o);
    this.replaceParameter('in_proj_weight', [
      ['in_proj_weight', values],
      ['in_proj_weight_scale', scale],
    ]);
    this.inProjWeight = values;
    this.inProjScale = scale;
  }

  // ---- Incremental decoding (KV cache) ------------------------------------------------------
  // The methods below split forward() into its projections and its attention so a decoder can
  // project only new positions and reuse the keys/values of earlier ones. They always work
  // batch-first with heads split: (N, h, T, dK). forward() itself does not use them.

  /** Query projection split into heads: query (N, L, E) batch-first -> (N, h, L, dK). */
  projectQuery(query: Tensor): Tensor {
    this.checkBatchFirst3D(query, this.embedDim, 'query');
    return this.splitHeads(this.projectPart(query, 0), this.numHeads);
  }

  /**
   * Key and value projections split into heads: key (N, S, kdim), value (N, S, vdim) batch-first ->
   * k, v (N, h, S, dK). For cross-attention these depend on the memory alone: compute them once.
   */
  projectKeyValue(
    key: Tensor,
    value: Tensor,
  ): {
    /** Projected keys (N, h, S, dK). */
    k: Tensor;
    /** Projected values (N, h, S, dK). */
    v: Tensor;
  } {
    this.checkBatchFirst3D(key, this.kdim, 'key');
    this.checkBatchFirst3D(value, this.vdim, 'value');
    const hKV = this.numKVHeads;
    return { k: this.splitHeads(this.projectPart(key, 1), hKV), v: this.splitHeads(this.projectPart(value, 2), hKV) };
  }

  /**
   * Self-attention projections of x (N, L, E) batch-first, in one GEMM as forward() does: q (N, h, L, dK),
   * k and v (N, hKV, L, dK).
   */
  projectSelf(x: Tensor): {
    /** Projected queries (N, h, L, dK). */
    q: Tensor;
    /** Projected keys (N, hKV, L, dK). */
    k: Tensor;
    /** Projected values (N, hKV, L, dK). */
    v: Tensor;
  } {
    this.checkBatchFirst3D(x, this.embedDim, 'x');
    if (!this.inProjWeight) {
      const { k, v } = this.projectKeyValue(x, x);
      return { q: this.projectQuery(x), k, v };
    }
    const [q, k, v] = this.projectAll(x);
    const hKV = this.numKVHeads;
    return { q: this.splitHeads(q, this.numHeads), k: this.splitHeads(k, hKV), v: this.splitHeads(v, hKV) };
  }

  /**
   * Attention of projected queries q (N, h, L, dK) over projected keys/values k, v (N, hKV, S, dK),
   * heads concatenated and projected by Wᴼ: returns output (N, L, E) batch-first and, if asked,
   * the per-head weights (N, h, L, S). keyPaddingMask (N, S): TRUE = blocked, or float, added;
   * attnBias (L, S), float, added (a sliding window's −∞ beyond it), or per head (1 or N, h, L, S): T5's
   * relative position bias.
   * isCausal aligns to the end (query i is key position i + S − L), as a KV cache needs.
   */
  attendProjected(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    options: {
      keyPaddingMask?: Tensor | null;
      attnBias?: Tensor | null;
      isCausal?: boolean;
      needWeights?: boolean;
    } = {},
  ): {
    /** The output (N, L, E), batch-first. */
    output: Tensor;
    /** The per-head weights (N, h, L, S), or null unless needWeights. */
    weights: Tensor | null;
  } {
    const name = 'MultiheadAttention';
    const h = this.numHeads;
    const dK = this.headDim;
    if (q.ndim !== 4 || q.shape[1] !== h || q.shape[3] !== dK)
      throw new Error(`${name}: projected query must be (N, ${h}, L, ${dK}), got ${shapeToString(q.shape)}`);
    const [N, , L] = q.shape;
    const hKV = this.numKVHeads;
    for (const [arg, t] of [
      ['key', k],
      ['value', v],
    ] as const) {
      if (t.ndim !== 4 || t.shape[0] !== N || t.shape[1] !== hKV || t.shape[3] !== dK || t.shape[2] !== k.shape[2]) {
        throw new Error(`${name}: projected ${arg} must be (${N}, ${hKV}, S, ${dK}), got ${shapeToString(t.shape)}`);
      }
    }
    const S = k.shape[2];
    const bias = this.buildBias(options.attnBias ?? null, options.keyPaddingMask ?? null, N, L, S, true);
    const needWeights = options.needWeights ?? false;
    const res = attentionCore(
      q,
      k,
      v,
      bias,
      {
        causal: options.isCausal ?? false,
        scale: 1 / Math.sqrt(dK),
        dropoutP: this.training ? this.dropout : 0,
        needWeights,
      },
      [N, h],
    );
    // (N, h, L, dK) -> (N, L, h·dK), then Wᴼ -> (N, L, E).
    const output = this.outProj.forward(F.permute(res.output, [0, 2, 1, 3]).reshape(N, L, h * dK));
    return { output, weights: needWeights ? res.weights : null };
  }

  /**
   * Projection i (0 query, 1 key, 2 value) of x: rows [iE, (i+1)E) of the packed in_proj_weight and
   * in_proj_bias, read in place (linearRows: no copy of the weight per call), or the separate weight.
   */
  private projectPart(x: Tensor, i: 0 | 1 | 2): Tensor {
    const E = this.embedDim;
    const b = this.inProjBias;
    if (this.inProjWeight) {
      const y = this.inProject(x, i, 1);
      const lora = this.partLora(x, i);
      return lora ? F.add(y, lora) : y;
    }
    const w = i === 0 ? this.qProjWeight! : i === 1 ? this.kProjWeight! : this.vProjWeight!;
    return F.linear(x, w, b ? F.narrow(b, 0, i * E, E) : null);
  }

  /** (N, T, heads·dK) -> (N, heads, T, dK). */
  private splitHeads(t: Tensor, heads: number): Tensor {
    const [N, T] = t.shape;
    return F.permute(t.reshape(N, T, heads, this.headDim), [0, 2, 1, 3]);
  }

  private checkBatchFirst3D(t: Tensor, width: number, arg: string): void {
    if (t.ndim !== 3 || t.shape[2] !== width) {
      throw new Error(
        `MultiheadAttention: ${arg} must be batch-first (N, T, ${width}), got shape ${shapeToString(t.shape)}`,
      );
    }
  }

  /** attnMask and keyPaddingMask (torch.nn meaning: TRUE = blocked) as one additive bias. */
  private buildBias(
    attnMask: Tensor | null,
    kpm: Tensor | null,
    N: number,
    L: number,
    S: number,
    batched: boolean,
  ): Tensor | null {
    const name = 'MultiheadAttention';
    const h = this.numHeads;
    const geometry = { B: N, H: h, L, S, lead: [N, h] };
    let am: Tensor | null = null;
    if (attnMask) {
      const m = maskToBias(attnMask, 'block', name, 'attnMask');
      if (m.ndim === 2) {
        if (m.shape[0] !== L || m.shape[1] !== S)
          throw new Error(`${name}: 2-D attnMask must have shape [${L}, ${S}] (L, S), got ${shapeToString(m.shape)}`);
        am = m.reshape(1, 1, L, S);
      } else if (m.ndim === 3) {
        if (m.shape[0] !== N * h || m.shape[1] !== L || m.shape[2] !== S) {
          throw new Error(
            `${name}: 3-D attnMask must have shape [${N * h}, ${L}, ${S}] ` +
              `(N·numHeads, L, S), got ${shapeToString(m.shape)}`,
          );
        }
        am = m.reshape(N, h, L, S);
      } else if (m.ndim === 4) {
        // A per-head bias shared by the rows (T5's relative position bias, (1, h, L, S)), broadcast, not copied.
        if ((m.shape[0] !== N && m.shape[0] !== 1) || m.shape[1] !== h || m.shape[2] !== L || m.shape[3] !== S) {
          throw new Error(
            `${name}: 4-D attnMask must have shape [${N} or 1, ${h}, ${L}, ${S}] ` +
              `(N, numHeads, L, S), got ${shapeToString(m.shape)}`,
          );
        }
        am = m;
      } else {
        throw new Error(`${name}: attnMask must be 2-D, 3-D or 4-D, got shape ${shapeToString(m.shape)}`);
      }
    }
    let pm: Tensor | null = null;
    if (kpm) {
      const m = maskToBias(kpm, 'block', name, 'keyPaddingMask');
      const want = batched ? [N, S] : [S];
      if (m.ndim !== want.length || m.shape.some((d, i) => d !== want[i])) {
        throw new Error(
          `${name}: keyPaddingMask must have shape ${shapeToString(want)} ` +
            `(${batched ? 'N, S' : 'S'}), got ${shapeToString(m.shape)}`,
        );
      }
      pm = m.reshape(N, 1, 1, S);
    }
    const bias = am && pm ? F.add(am, pm) : (am ?? pm);
    return bias ? alignBias(bias, geometry, name, 'mask') : null;
  }
}
