/**
 * Activation recomputation (Chen et al. 2016, "Training Deep Nets with Sublinear Memory Cost"; PyTorch's
 * torch.utils.checkpoint, Hugging Face's gradient_checkpointing): a part of the forward pass (one block of a
 * model) is run without recording a graph, so none of its inner activations outlive it, and rerun in the
 * backward pass, with recording, when its gradient is needed. Memory then holds the parts' inputs and outputs,
 * not their insides: a step costs one more forward per part.
 *
 * The rerun sees what the first run saw: the same input storage, the same parameters (nothing updates them
 * between forward and backward), and the default generator's state as it was (torch's preserve_rng_state), so
 * dropout draws the same masks. The gradients are the plain path's: the same kernels on the same values.
 */
import { defaultGenerator } from '../tensor/random.ts';
import { memoryScope } from '../tensor/storage.ts';
import { Tensor } from '../tensor/tensor.ts';
import { backward, record } from './engine.ts';
import { enableGrad, isGradEnabled, noGrad } from './grad-mode.ts';

/**
 * fn(x), its activations recomputed in the backward pass: `params` are the tensors fn reads besides x that may
 * require a gradient (a block's parameters; those that do receive it in `.grad` during the rerun). Where nothing
 * is recorded (noGrad, or neither x nor a parameter requires a gradient) it is fn(x). fn must be a function of x,
 * `params`, values fixed until the backward pass, and the default generator (dropout).
 */
export function checkpoint(fn: (x: Tensor) => Tensor, x: Tensor, params: readonly Tensor[]): Tensor {
  const trainable = params.filter((p) => p.requiresGrad);
  if (!isGradEnabled() || (!x.requiresGrad && trainable.length === 0)) return fn(x);
  if (x.dtype !== 'float32') throw new Error(`checkpoint: x must be float32, got ${x.dtype}`);
  const rng = defaultGenerator.getState();
  // Its own scope: the part's activations are released as soon as its output is made.
  const out = memoryScope(() => noGrad(() => fn(x)));
  return record(out, 'checkpoint', [x, ...trainable], (g) => {
    const after = defaultGenerator.getState();
    defaultGenerator.setState(rng);
    try {
      const dx = memoryScope(() => {
        // A leaf over x's values: the rerun's graph ends here, and its gradient is x's.
        const leaf = Tensor.fromStorage(x.device, x.storage, x.shape, 'float32');
        leaf.requiresGrad = x.requiresGrad;
        const y = enableGrad(() => fn(leaf));
        backward(y, g);
        return leaf.grad;
      });
      return [dx, ...trainable.map(() => null)]; // the parameters' gradients are already in their .grad
    } finally {
      defaultGenerator.setState(after);
    }
  });
}
