import assert from 'node:assert/strict';
import type { Tensor } from '../../src/index.ts';

/**
 * Elementwise |a − b| <= atol + rtol·|b| with equal shapes (NaN matches NaN, ±∞ must match exactly).
 * The default is the project's PyTorch-parity tolerance, 1e-4 + 1e-4·|b|.
 */
export function assertClose(
  actual: Tensor | ArrayLike<number>,
  expected: Tensor | ArrayLike<number>,
  what: string,
  atol = 1e-4,
  rtol = 1e-4,
): void {
  const a = 'dataSync' in actual ? actual.dataSync() : actual;
  const b = 'dataSync' in expected ? expected.dataSync() : expected;
  if ('shape' in actual && 'shape' in expected) {
    assert.deepEqual([...actual.shape], [...expected.shape], `${what}: shape`);
  }
  assert.equal(a.length, b.length, `${what}: length`);
  let worst = -1;
  let worstErr = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i];
    const y = b[i];
    if (
      Number.isNaN(y) ? Number.isNaN(x) : !Number.isFinite(y) ? x === y : Math.abs(x - y) <= atol + rtol * Math.abs(y)
    )
      continue;
    const err = Math.abs(x - y);
    if (worst < 0 || !(err <= worstErr)) {
      worst = i;
      worstErr = err;
    }
  }
  if (worst >= 0) {
    assert.fail(
      `${what}: element ${worst} is ${a[worst]}, expected ${b[worst]} (|diff| ${worstErr}, tolerance ${atol} + ${rtol}·|expected|)`,
    );
  }
}

/**
 * {@link assertClose} for tensors on any device: the values are read with `await t.data()` (a GPU's read back
 * only asynchronously), then compared as assertClose compares them.
 */
export async function assertCloseAsync(
  actual: Tensor,
  expected: Tensor | ArrayLike<number>,
  what: string,
  atol = 1e-4,
  rtol = 1e-4,
): Promise<void> {
  if ('shape' in expected) assert.deepEqual([...actual.shape], [...expected.shape], `${what}: shape`);
  const a = await actual.data();
  const b = 'shape' in expected ? await expected.data() : expected;
  assertClose(a, b, what, atol, rtol);
}
