// Entry point of the wasm backend's module: every kernel, one binary (built twice by
// scripts/build-wasm.mjs: plain SIMD and relaxed SIMD).
export * from './gemm';
export * from './kernels';
export * from './elementwise';
export * from './gemv';
