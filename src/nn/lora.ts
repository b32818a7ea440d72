/**
 * LoRA (Hu et al. 2021, "LoRA: Low-Rank Adaptation of Large Language Models"): a frozen weight W (out, in)
 * is adapted by a trainable low-rank pair, h = W·x + (α/r)·B·A·x with A (r, in) and B (out, r), r ≪ in, out.
 * Only A and B train, so a fine-tuned model is the base plus a few thousand numbers per layer.
 *
 * Computed as Hugging Face PEFT's `lora.Linear` computes it (peft/tuners/lora/layer.py), so that its
 * gradients and trained weights equal PEFT's: `lora_B(lora_A(dropout(x))) * scaling`, the dropout on the
 * adapter's input only, the base layer's output untouched. A and B are named `lora_A.weight` and
 * `lora_B.weight`, PEFT's names (its on-disk keys add the base model's module path: models/hf/peft.ts).
 *
 * A `LoraLinear` holds only the pair; the layer it adapts owns it (`Linear.addLora`, and
 * `MultiheadAttention.addInProjLora` for rows of the packed q/k/v projection) and adds its output.
 */
import * as F from '../ops/index.ts';
import { linearRows } from '../ops/matmul.ts';
import { type Tensor, zeros } from '../tensor/tensor.ts';
import { linearDefault_, normal_ } from './init.ts';
import { Module } from './module.ts';

/** How a pair starts: PEFT's `init_lora_weights` (true: A as nn.Linear, B zero, so the adapter starts as a no-op). */
export type LoraInit = 'default' | 'gaussian' | 'random';

/** One adapter's shape and scaling (what PEFT's LoraConfig says for one module). */
export interface LoraOptions {
  /** Rank r of the pair. */
  r: number;
  /** α: the update is scaled by α/r (α/√r with rsLoRA). */
  alpha: number;
  /** Dropout on the adapter's input in training (PEFT's `lora_dropout`, default 0). */
  dropout?: number;
  /** Rank-stabilised scaling α/√r (Kalajdzievski 2023; PEFT's `use_rslora`), default false. */
  rslora?: boolean;
  /**
   * 'default': A drawn as nn.Linear (Kaiming uniform, a = √5), B zero (PEFT's `init_lora_weights: true`);
   * 'gaussian': A ~ N(0, 1/r), B zero; 'random': both as nn.Linear, so the adapter changes the output at once
   * (PEFT's `init_lora_weights: false`, for tests).
   */
  init?: LoraInit;
}

/** A bare weight (rows, cols) named `weight`: LoRA's A and B (not nn.Linear: a quantized base leaves them float). */
export class LoraFactor extends Module {
  /** (outFeatures, inFeatures), as nn.Linear's weight. */
  readonly weight: Tensor;

  constructor(inFeatures: number, outFeatures: number) {
    super();
    this.weight = this.registerParameter('weight', linearDefault_(zeros(outFeatures, inFeatures)));
  }

  /** x (..., in) -> (..., out). */
  forward(x: Tensor): Tensor {
    return F.linear(x, this.weight);
  }
}

/** The trainable low-rank pair of one adapted layer: `lora_A` (r, in), `lora_B` (out, r), scaling α/r. */
export class LoraLinear extends Module {
  /** A (r, inFeatures). */
  readonly loraA: LoraFactor;
  /** B (outFeatures, r). */
  readonly loraB: LoraFactor;
  /** Dropout probability on the adapter's input in training (PEFT's `lora_dropout`). */
  readonly dropout: number;
  /** α/r (α/√r with rsLoRA). */
  readonly scaling: number;

  constructor(
    /** Width of the adapted layer's input. */
    readonly inFeatures: number,
    /** Width of the adapted layer's output (the rows it adapts). */
    readonly outFeatures: number,
    /** Rank, α, dropout, init, as given. */
    readonly options: LoraOptions,
  ) {
    super();
    for (const [arg, v] of [
      ['inFeatures', inFeatures],
      ['outFeatures', outFeatures],
      ['r', options.r],
    ] as const)
      if (!Number.isInteger(v) || v < 1) throw new Error(`LoraLinear: ${arg} must be a positive integer, got ${v}`);
    if (typeof options.alpha !== 'number' || !Number.isFinite(options.alpha))
      throw new Error(`LoraLinear: alpha must be a finite number, got ${String(options.alpha)}`);
    const p = options.dropout ?? 0;
    if (!(p >= 0 && p < 1)) throw new Error(`LoraLinear: dropout must be in [0, 1), got ${p}`);
    const { r, alpha } = options;
    this.scaling = options.rslora ? alpha / Math.sqrt(r) : alpha / r;
    this.loraA = this.registerModule('lora_A', new LoraFactor(inFeatures, r));
    this.loraB = this.registerModule('lora_B', new LoraFactor(r, outFeatures));
    const init = options.init ?? 'default';
    if (init === 'gaussian') normal_(this.loraA.weight, 0, 1 / r);
    else if (init !== 'random' && init !== 'default')
      throw new Error(`LoraLinear: init must be 'default', 'gaussian' or 'random', got ${String(init)}`);
    if (init !== 'random')
      this.loraB.weight.device.fill(this.loraB.weight.storage, 'float32', 0, this.loraB.weight.size);
    this.dropout = p;
  }

  /** x (..., in) -> the update (..., out): scaling·B·A·dropout(x), PEFT's order of operations. */
  forward(x: Tensor): Tensor {
    const h = this.loraA.forward(F.dropout(x, this.dropout, this.training)); // (..., r)
    return F.mul(this.loraB.forward(h), this.scaling);
  }

  /**
   * Rows [start, start + length) of the update (all rows: forward()): h·B[rows]ᵀ read in place, for a layer that
   * takes one part of a wider adapter (one of q, k, v from an adapter on all three).
   */
  forwardRows(x: Tensor, start: number, length: number): Tensor {
    const h = this.loraA.forward(F.dropout(x, this.dropout, this.training)); // (..., r)
    return F.mul(linearRows(h, this.loraB.weight, null, start, length), this.scaling);
  }

  /** ΔW = scaling·B·A (out, in): what merging adds to the adapted weight. */
  deltaWeight(): Tensor {
    return F.mul(F.matmul(this.loraB.weight, this.loraA.weight), this.scaling); // (out, r)·(r, in)
  }
}

/** Freeze every parameter of `module` (requiresGrad false), as torch's `module.requires_grad_(False)`; returns it. */
export function freeze<M extends Module>(module: M): M {
  for (const p of module.parameters()) p.requiresGrad = false;
  return module;
}

/** Every LoRA pair in `module`'s tree, by its module path (`h.0.attn.lora_qkv`). */
export function loraModules(module: Module): [string, LoraLinear][] {
  return module.namedModules().filter((e): e is [string, LoraLinear] => e[1] instanceof LoraLinear);
}

/** The parameters that train: those with requiresGrad, by name (a LoRA model: only the pairs). */
export function trainableParameters(module: Module): [string, Tensor][] {
  return module.namedParameters().filter(([, p]) => p.requiresGrad);
}
