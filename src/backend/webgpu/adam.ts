/**
 * Adam/AdamW on the GPU, in place, a thread per parameter: the js twin's formulas in its order of operations.
 * The per-step constants (the bias corrections folded into the step size and √(1 − β2ᵗ), the decay factors)
 * are computed on the host in float64 by the js twin's own adamConstants and passed as float32 parameters,
 * as are β1, 1 − β1, β2, 1 − β2 and ε; the update itself is float32 (the js twin's is float64, rounded when
 * stored), so the two agree to float32 rounding.
 * Oracle: js/adam.ts.
 */
import type { Backend } from '../backend.ts';
import { adamConstants } from '../js/adam.ts';
import { f } from './context.ts';
import { buf } from './device.ts';
import { webgpuKernels } from './registry.ts';
import { perElement, runPerElement } from './wgsl.ts';

const code = (l2: boolean) =>
  perElement(
    'b1: f32, c1: f32, b2: f32, c2: f32, eps: f32, stepSize: f32, bc2Sqrt: f32, shrink: f32, l2: f32',
    /* wgsl */ `
@group(0) @binding(1) var<storage, read_write> param: array<f32>;
@group(0) @binding(2) var<storage, read> grad: array<f32>;
@group(0) @binding(3) var<storage, read_write> m: array<f32>;
@group(0) @binding(4) var<storage, read_write> v: array<f32>;`,
    /* wgsl */ `
  let w = param[i];
  var g = grad[i];
  ${l2 ? 'g = g + p.l2 * w;' : ''}
  let mi = p.b1 * m[i] + p.c1 * g;
  let vi = p.b2 * v[i] + p.c2 * g * g;
  m[i] = mi;
  v[i] = vi;
  param[i] = w * p.shrink - p.stepSize * (mi / (sqrt(vi) / p.bc2Sqrt + p.eps));`,
  );

export const adam: Backend['adam'] = (param, grad, m, v, lr, beta1, beta2, eps, weightDecay, decoupled, step) => {
  const { stepSize, bc2Sqrt, shrink, l2 } = adamConstants(lr, beta1, beta2, weightDecay, decoupled, step);
  const n = buf(param).bytes / 4;
  runPerElement(
    `adam-${l2 !== 0}`,
    code(l2 !== 0),
    n,
    [buf(param), buf(grad), buf(m), buf(v)],
    [f(beta1), f(1 - beta1), f(beta2), f(1 - beta2), f(eps), f(stepSize), f(bc2Sqrt), f(shrink), f(l2)],
  );
};

webgpuKernels.register('adam', { adam });
