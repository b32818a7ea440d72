/**
 * Adam/AdamW (assembly/adam.ts) behind the Backend interface, in wasm when the parameters, their
 * gradients and the moments are wasm views (route.ts; the case in training), else the js twin.
 */
import type { HostKernels } from '../backend.ts';
import { adamConstants, adam as jsAdam } from '../js/adam.ts';
import { declareExports, sig, type F64, type I32, type Ptr } from './loader.ts';
import { splitUnits } from './parallel.ts';
import { wasmKernels } from './registry.ts';
import { inWasm } from './route.ts';

// A part of a block (the caller offsets the addresses; the thread pool runs parts).
declareExports('adam.ts', {
  adam: sig<
    [
      p: Ptr,
      g: Ptr,
      m: Ptr,
      v: Ptr,
      n: I32,
      b1: F64,
      c1: F64,
      b2: F64,
      c2: F64,
      stepSize: F64,
      bc2Sqrt: F64,
      eps: F64,
      shrink: F64,
      l2: F64,
    ]
  >(14),
});

/**
 * Adam/AdamW in place, in float64 as the twin (bit-identical results), split among the threads
 * for large blocks. The step constants are the twin's own (adamConstants).
 */
export const adam: HostKernels['adam'] = (param, grad, m, v, lr, beta1, beta2, eps, weightDecay, decoupled, step) => {
  const n = param.length;
  if (!inWasm(n > 0, param, grad, m, v))
    return jsAdam(param, grad, m, v, lr, beta1, beta2, eps, weightDecay, decoupled, step);
  const { stepSize, bc2Sqrt, shrink, l2 } = adamConstants(lr, beta1, beta2, weightDecay, decoupled, step);
  const [pp, pg, pm, pv] = [param.byteOffset, grad.byteOffset, m.byteOffset, v.byteOffset];
  splitUnits('adam', n, 16, (i0, i1) => [
    pp + 4 * i0,
    pg + 4 * i0,
    pm + 4 * i0,
    pv + 4 * i0,
    i1 - i0,
    beta1,
    1 - beta1,
    beta2,
    1 - beta2,
    stepSize,
    bc2Sqrt,
    eps,
    shrink,
    l2,
  ]);
};

wasmKernels.register('adam', { adam });
