import { test } from 'node:test';
import assert from 'node:assert/strict';
import { F, gradcheck, noGrad, tensor, type Tensor } from '../../src/index.ts';
import { record } from '../../src/autograd/engine.ts';

test('gradients accumulate over backward calls, as in PyTorch', () => {
  const x = tensor([1, 2, 3], undefined, { requiresGrad: true });
  F.sum(F.mul(x, x)).backward();
  F.sum(F.mul(x, x)).backward();
  assert.deepEqual(x.grad!.toArray(), [4, 8, 12]);
});

test('a tensor used twice receives both gradients (diamond graph)', () => {
  const x = tensor([2], undefined, { requiresGrad: true });
  const y = F.mul(x, 3);
  F.add(F.mul(y, y), y).backward(); // d/dx (9x² + 3x) = 18x + 3
  assert.deepEqual(x.grad!.toArray(), [39]);
});

test('noGrad records nothing; non-leaf grads are not kept unless retained', () => {
  const x = tensor([1, 2], undefined, { requiresGrad: true });
  const y = noGrad(() => F.mul(x, 2));
  assert.equal(y.requiresGrad, false);
  assert.equal(y.gradFn, null);
  const z = F.mul(x, 2).retainGrad();
  const w = F.mul(x, 2);
  F.sum(F.add(F.mul(z, z), w)).backward();
  assert.deepEqual(z.grad!.toArray(), [4, 8]);
  assert.equal(w.grad, null);
});

test('backward errors: no grad required, non-scalar without gradOutput, wrong gradOutput shape', () => {
  assert.throws(() => tensor([1]).backward(), /does not require grad/);
  const x = tensor([1, 2], undefined, { requiresGrad: true });
  assert.throws(() => F.mul(x, 2).backward(), /one-element outputs, got shape \[2\]/);
  assert.throws(
    () => F.mul(x, 2).backward(tensor([1, 2, 3])),
    /gradOutput shape \[3\] does not match output shape \[2\]/,
  );
});

test('gradcheck catches a wrong backward rule', () => {
  // square with a deliberately wrong derivative (x instead of 2x)
  const badSquare = (x: Tensor) => record(F.mul(x.detach(), x.detach()), 'bad', [x], (g) => [F.mul(g, x.detach())]);
  const x = tensor([0.5, -1.5, 2], undefined, { requiresGrad: true });
  const rep = gradcheck(badSquare, [x]);
  assert.equal(rep.ok, false);
  assert.ok(rep.failure);
});

test('long chains do not overflow the stack', () => {
  const x = tensor([1], undefined, { requiresGrad: true });
  let y = x;
  for (let i = 0; i < 20000; i++) y = F.add(y, 1e-4);
  y.backward();
  assert.deepEqual(x.grad!.toArray(), [1]);
});
