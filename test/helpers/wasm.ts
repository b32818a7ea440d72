/**
 * The wasm module as a feature the tests need: skipped with its load error on a developer's
 * machine, a failure under CI (test/helpers/tools.ts featureSkip); and the builds the twin tests
 * run, with the relaxed-SIMD build's absence said and, where this engine runs relaxed SIMD, failed.
 */
import { kernels, relaxedSimdSupported, wasmLoadError } from '../../src/backend/wasm/loader.ts';
import { featureSkip, requireFeature } from './tools.ts';

const WASM = 'the wasm module (npm run build:wasm)';
const missing = () => (kernels() ? null : `did not load: ${wasmLoadError()}`);

/** The `skip` option for a test that needs the wasm module. */
export const wasmSkip = (): false | string => featureSkip(WASM, missing());

/** Throws unless the wasm module loads (first in a test given wasmSkip). */
export const requireWasm = (): void => requireFeature(WASM, missing());

/**
 * The builds a twin test runs: both where the relaxed-SIMD one loaded, else the plain-SIMD one,
 * which this says on stderr (a `#` line in the runner's output). Throws when the engine runs
 * relaxed SIMD and the relaxed build still did not load: the loader would have skipped it.
 */
export function wasmVariants<V extends string>(loaded: V, file: string): V[] {
  if (loaded !== 'simd') return [loaded, 'simd' as V];
  if (relaxedSimdSupported())
    throw new Error(
      `${file}: this engine runs relaxed SIMD, yet the plain-SIMD build loaded: the relaxed build is not tested`,
    );
  process.stderr.write(
    `# ${file}: this engine (Node ${process.versions.node}) does not run relaxed SIMD: only the plain-SIMD build is tested\n`,
  );
  return [loaded];
}
