import { getBackend } from '../backend/backend.ts';
import { type GradFn, Tensor, setReshapeImpl, full } from '../tensor/tensor.ts';
import { sameShape, shapeToString, stridesOf } from '../tensor/shape.ts';
import { allocFloat32 } from '../tensor/storage.ts';
import type { F32 } from '../backend/backend.ts';
import { isGradEnabled } from './grad-mode.ts';

/**
 * Attach a backward rule to `out` if gradients are being recorded and any input needs one.
 * Every differentiable op ends with this call: forward and backward sit side by side in the op.
 */
export function record(
  out: Tensor,
  name: string,
  inputs: readonly Tensor[],
  backward: (gradOutput: Tensor) => (Tensor | null)[],
): Tensor {
  if (!isGradEnabled()) return out;
  let needed = false;
  for (const t of inputs) if (t.requiresGrad) needed = true;
  if (!needed) return out;
  out.requiresGrad = true;
  out.gradFn = { name, inputs, backward } satisfies GradFn;
  return out;
}

/**
 * Add `g` into `acc` in place (same shape), through the backend's binary add with out = acc
 * (every backend's binary allows out to be the very array of an input: each element is read
 * before it is written, at the same index). With the wasm backend and both in wasm memory (a
 * parameter's long-lived gradient, a step's gradients), it runs in wasm.
 */
function accumulate(acc: Tensor, g: Tensor): void {
  const st = stridesOf(acc.shape);
  const a = acc.storage as F32;
  getBackend().binary('add', a, st, g.storage as F32, st, a, acc.shape);
}

/**
 * A new gradient for a leaf (or a tensor that retains its gradient), never the step's memoryScope
 * storage (it outlives the step). A parameter's (long-lived storage) is long-lived too: wasm
 * memory under the wasm backend, where backward accumulates into it and Adam reads it in place;
 * `zeroGrad()` zeroes it for the next step (set to none, a new one would be made per step and
 * freed only by the garbage collector). Other leaves get an ordinary array.
 */
function newGrad(t: Tensor, g: Tensor): Tensor {
  const d = t.device;
  const data = d.alloc('float32', t.size, { persistent: d.isPersistent?.(t.storage) ?? false });
  d.copy(g.storage, data, 'float32', t.size);
  return Tensor.fromStorage(d, data, t.shape, 'float32');
}

let passes = 0;
/**
 * A count of backward() calls, for rules that share state among the outputs of one op within one
 * pass (split's pieces fill one gradient buffer for their input).
 */
export function backwardPass(): number {
  return passes;
}

/**
 * Reverse-mode differentiation from `root`. The gradient flows back through every recorded op in
 * reverse topological order; leaves that require gradients accumulate it in `.grad` (so two
 * backward() calls add up, as in PyTorch, until zeroGrad()). `gradOutput` is the gradient of the
 * loss with respect to `root`; it may be left out when `root` holds one element (it is then 1).
 */
export function backward(root: Tensor, gradOutput?: Tensor): void {
  passes++;
  if (!root.requiresGrad) {
    throw new Error('backward: tensor does not require grad (no input of the computation had requiresGrad set)');
  }
  if (gradOutput === undefined) {
    if (root.size !== 1) {
      throw new Error(
        `backward: gradient can be implicitly created only for one-element ` +
          `outputs, got shape ${shapeToString(root.shape)}`,
      );
    }
    gradOutput = full(root.shape, 1);
  } else if (!sameShape(gradOutput.shape, root.shape)) {
    throw new Error(
      `backward: gradOutput shape ${shapeToString(gradOutput.shape)} does ` +
        `not match output shape ${shapeToString(root.shape)}`,
    );
  }

  // Topological order by iterative DFS (graphs of thousands of ops would overflow recursion).
  const order: Tensor[] = [];
  const visited = new Set<Tensor>();
  const stack: [Tensor, number][] = [[root, 0]];
  visited.add(root);
  while (stack.length > 0) {
    const top = stack[stack.length - 1];
    const [t, i] = top;
    const inputs = t.gradFn?.inputs ?? [];
    if (i < inputs.length) {
      top[1]++;
      const child = inputs[i];
      if (child.requiresGrad && !visited.has(child)) {
        visited.add(child);
        stack.push([child, 0]);
      }
    } else {
      stack.pop();
      order.push(t);
    }
  }

  const grads = new Map<Tensor, Tensor>();
  grads.set(root, gradOutput);
  for (let idx = order.length - 1; idx >= 0; idx--) {
    const t = order[idx];
    const g = grads.get(t);
    if (g === undefined) continue;
    grads.delete(t); // free as we go: peak memory stays near one layer's activations
    if (t.gradFn === null || t.retainsGrad) {
      if (t.grad === null) t.grad = newGrad(t, g);
      else accumulate(t.grad, g);
    }
    if (t.gradFn === null) continue;
    const inputGrads = t.gradFn.backward(g);
    const inputs = t.gradFn.inputs;
    for (let i = 0; i < inputs.length; i++) {
      const gi = inputGrads[i];
      const inp = inputs[i];
      if (gi === null || gi === undefined || !inp.requiresGrad) continue;
      if (!sameShape(gi.shape, inp.shape)) {
        throw new Error(
          `backward: internal error in '${t.gradFn.name}': gradient shape ` +
            `${shapeToString(gi.shape)} for input of shape ` +
            `${shapeToString(inp.shape)}`,
        );
      }
      const prev = grads.get(inp);
      if (prev === undefined) grads.set(inp, gi);
      else {
        // Never mutate a gradient some rule may still hold: copy on first accumulation.
        if (ownedGrads.has(prev)) accumulate(prev, gi);
        else grads.set(inp, ownedSum(prev, gi));
      }
    }
  }
}

/** Gradients created by accumulation belong to the engine and may be updated in place. */
const ownedGrads = new WeakSet<Tensor>();
/**
 * prev + g in new storage the engine owns: a step's storage inside a memoryScope (wasm memory
 * under the wasm backend, so this add and the later in-place ones run there), in one pass.
 */
function ownedSum(prev: Tensor, g: Tensor): Tensor {
  const sum = Tensor.fromStorage(prev.device, allocFloat32(prev.device, prev.size, false), prev.shape, 'float32');
  const st = stridesOf(prev.shape);
  getBackend().binary('add', prev.storage as F32, st, g.storage as F32, st, sum.storage as F32, prev.shape);
  ownedGrads.add(sum);
  return sum;
}

// reshape is a view; its gradient is the output gradient viewed back in the input's shape.
setReshapeImpl((t, shape) => {
  // A view: the same storage on the same device, never a read.
  const out = Tensor.fromStorage(t.device, t.storage, shape, t.dtype);
  return record(out, 'reshape', [t], (g) => [Tensor.fromStorage(g.device, g.storage, t.shape, 'float32')]);
});
