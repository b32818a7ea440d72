import { type F32, getBackend } from '../backend/backend.ts';
import { Tensor } from '../tensor/tensor.ts';

/** Zeros beside parameter p: on its device, long-lived (wasm memory under wasm, where Adam runs in place). */
function longLivedZeros(p: Tensor): Tensor {
  return Tensor.fromStorage(p.device, p.device.alloc('float32', p.size, { persistent: true }), p.shape, 'float32');
}

/** Options of {@link Adam} and {@link AdamW}, with torch.optim's names and defaults. */
export interface AdamOptions {
  /** Learning rate (default 1e-3); a schedule may set `optimizer.lr` before each step. */
  lr?: number;
  /** (β1, β2). The paper uses (0.9, 0.98), §5.3; torch's default is (0.9, 0.999). */
  betas?: [number, number];
  /** The paper uses 1e-9; torch's default is 1e-8. */
  eps?: number;
  /** Weight decay (default 0): an L2 term added to the gradient in Adam, decoupled in AdamW. */
  weightDecay?: number;
}

/** The optimiser's state, what a training checkpoint saves to resume exactly. */
export interface AdamState {
  /** Steps taken so far (bias correction uses it). */
  step: number;
  /** First moments (running mean of the gradients), one array per parameter, in `params` order. */
  m: Tensor[];
  /** Second moments (running mean of the squared gradients), one array per parameter. */
  v: Tensor[];
}

/**
 * Adam (Kingma & Ba 2015) exactly as torch.optim.Adam computes it, including bias correction.
 * `weightDecay` adds an L2 term to the gradient (torch's Adam); AdamW decouples it.
 */
export class Adam {
  /** The parameters it updates, in the order given. */
  readonly params: Tensor[];
  /** Learning rate of the next step (schedules write it before each step). */
  lr: number;
  /** (β1, β2): decay rates of the first and second moments. */
  readonly betas: [number, number];
  /** Added to the denominator's square root, for numerical stability. */
  readonly eps: number;
  /** Weight decay coefficient (0: none). */
  readonly weightDecay: number;
  /** Whether weight decay is decoupled from the gradient (AdamW) or added to it (Adam). */
  protected readonly decoupled: boolean = false;
  /** Step count and moments; replace it to resume from a checkpoint. */
  state: AdamState;

  constructor(params: Iterable<Tensor>, options: AdamOptions = {}) {
    this.params = [...params];
    this.lr = options.lr ?? 1e-3;
    this.betas = options.betas ?? [0.9, 0.999];
    this.eps = options.eps ?? 1e-8;
    this.weightDecay = options.weightDecay ?? 0;
    const [b1, b2] = this.betas;
    if (!(this.lr >= 0)) throw new Error(`Adam: lr must be >= 0, got ${this.lr}`);
    if (!(b1 >= 0 && b1 < 1) || !(b2 >= 0 && b2 < 1))
      throw new Error(`Adam: betas must be in [0, 1), got [${b1}, ${b2}]`);
    if (!(this.eps >= 0)) throw new Error(`Adam: eps must be >= 0, got ${this.eps}`);
    for (const [i, p] of this.params.entries()) {
      if (!p.requiresGrad) throw new Error(`Adam: parameter ${i} does not require grad`);
    }
    // Long-lived blocks (wasm memory under the wasm backend, where Adam then runs in place).
    this.state = {
      step: 0,
      m: this.params.map((p) => longLivedZeros(p)),
      v: this.params.map((p) => longLivedZeros(p)),
    };
  }

  /** One update of every parameter that has a gradient. */
  step(): void {
    this.state.step++;
    const [b1, b2] = this.betas;
    for (const [i, p] of this.params.entries()) {
      if (!p.grad) continue;
      getBackend().adam(
        p.storage as F32,
        p.grad.storage as F32,
        this.state.m[i].storage as F32,
        this.state.v[i].storage as F32,
        this.lr,
        b1,
        b2,
        this.eps,
        this.weightDecay,
        this.decoupled,
        this.state.step,
      );
    }
  }

  /**
   * Clear the gradients as torch 1.13's zero_grad(set_to_none=False), the default here too: fill
   * the existing ones with 0, so each parameter keeps one gradient block for the whole run (with
   * the wasm backend that block lives in wasm memory, backward accumulates into it and Adam reads it
   * in place). `setToNone` true drops them (`.grad = null`, torch 2's default); the next backward
   * then makes new ones, whose memory returns only when the garbage collector runs, which it
   * cannot inside one long synchronous loop.
   */
  zeroGrad(setToNone = false): void {
    for (const p of this.params) {
      if (setToNone) p.grad = null;
      else if (p.grad) p.grad.device.fill(p.grad.storage, 'float32', 0, p.grad.size);
    }
  }
}

/** AdamW (Loshchilov & Hutter): weight decay applied to the weights, not through the gradient. */
export class AdamW extends Adam {
  /** Always true: AdamW decays the weights directly. */
  protected override readonly decoupled = true;

  constructor(params: Iterable<Tensor>, options: AdamOptions = {}) {
    super(params, { ...options, weightDecay: options.weightDecay ?? 1e-2 });
  }
}
