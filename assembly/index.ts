// Entry point of the wasm backend's module: every kernel family, one binary (built twice by
// scripts/build-wasm.mjs: plain SIMD and relaxed SIMD). One file per family, named as the js
// backend's files (src/backend/js/<family>.ts) and the bindings (src/backend/wasm/<family>.ts);
// simd.ts holds shared helpers and is not re-exported.
export * from './gemm';
export * from './softmax';
export * from './layernorm';
export * from './rmsnorm';
export * from './rotary';
export * from './elementwise';
export * from './attention';
export * from './crossentropy';
export * from './embedding';
export * from './layout';
export * from './adam';
export * from './quantized';

/** End of this module's static data: JavaScript must not allocate below it. */
export function heapBase(): i32 {
  return <i32>__heap_base;
}

/** 1 for the relaxed-SIMD (fma) build. */
export function relaxed(): i32 {
  return ASC_FEATURE_RELAXED_SIMD ? 1 : 0;
}
