/**
 * Greedy and beam search on qkv's models that let the event loop run before every step, so that an
 * AbortSignal fired by a timer or an event is heard mid-batch (the translation pipeline's `signal`).
 * The same checks, encoding, steps and results as search.ts's greedy and beamSearch, driven by the
 * asynchronous drivers the ONNX Runtime engine uses.
 */
import { noGrad } from '../autograd/grad-mode.ts';
import { enterEvalMode } from '../nn/module.ts';
import type { Tensor } from '../tensor/tensor.ts';
import {
  beamSearchAsync,
  checkBeamOptions,
  encodeSources,
  greedySearchAsync,
  prepareSearch,
  readsSync,
  releaseStepper,
  type BeamSearchOptions,
  type BeamSearchResult,
  type DecodeOptions,
  type DecodeResult,
  type Models,
} from './search.ts';
import { encodeStatic } from './static-seq2seq.ts';
import { pause, type AsyncStepper, type Stepper } from './stepper.ts';

/**
 * greedy, letting the event loop run before every step (so that a timer or an event can abort it
 * through `options.signal`): the same steps, the same result.
 */
export function greedyPausing(model: Models, src: Tensor, options: DecodeOptions): Promise<DecodeResult> {
  return runPausing(model, src, options, (stepper, maxLens, padId) =>
    greedySearchAsync(stepper, maxLens, { ...options, padId }),
  );
}

/** beamSearch, letting the event loop run before every step, as greedyPausing. */
export function beamSearchPausing(model: Models, src: Tensor, options: BeamSearchOptions): Promise<BeamSearchResult> {
  checkBeamOptions(options);
  return runPausing(
    model,
    src,
    options,
    (stepper, maxLens, padId) => beamSearchAsync(stepper, maxLens, { ...options, padId }),
    options.beamSize ?? 4,
  );
}

/**
 * search.ts run's checks and encoding, with every step an asynchronous one that first lets the event loop
 * run, then checks the signal. The models stay in eval mode until the search ends; autograd is off
 * around each model call (not across the pauses, where other code may run).
 */
/**
 * `stepper` driven asynchronously: each step yields to the event loop first and checks `signal`, and model
 * calls run without gradients (greedy, beam and Hugging Face's generate() share it).
 */
export function pausingStepper(stepper: Stepper, signal: AbortSignal | undefined): AsyncStepper {
  return {
    get rows() {
      return stepper.rows;
    },
    get vocabSize() {
      return stepper.vocabSize;
    },
    reorder: (rows) => noGrad(() => stepper.reorder(rows)),
    step: async (last) => {
      await pause();
      signal?.throwIfAborted();
      // A device without synchronous reads (a GPU) is read back asynchronously; the step itself is recorded
      // inside noGrad either way.
      if (stepper.stepAsync) return noGrad(() => stepper.stepAsync!(last));
      return noGrad(() => stepper.step(last));
    },
    ...(stepper.stepLogits && {
      stepLogits: async (last: Int32Array) => {
        await pause();
        signal?.throwIfAborted();
        return noGrad(() => stepper.stepLogits!(last));
      },
    }),
  };
}

async function runPausing<R>(
  model: Models,
  src: Tensor,
  options: DecodeOptions,
  search: (stepper: AsyncStepper, maxLens: number[], padId: number) => Promise<R>,
  /** Rows per sentence the search may keep (its beam): what a static cache holds. */
  beam = 1,
): Promise<R> {
  const ids = src.device.readSync ? src.dataSync<Int32Array>() : await src.data<Int32Array>();
  const { members, maxLens, padId } = prepareSearch(model, src, options, ids);
  const restore = enterEvalMode(members);
  try {
    // The static cache (options.staticCache) reads its steps back synchronously: the CPU backends only.
    const isStatic = Boolean(options.staticCache) && readsSync(members);
    const stepper = noGrad(() =>
      isStatic ? encodeStatic(members, src, options, maxLens, beam) : encodeSources(members, src, options),
    );
    try {
      return await search(pausingStepper(stepper, options.signal), maxLens, padId);
    } finally {
      if (isStatic) releaseStepper(stepper); // the static caches' storage and captures, freed now
    }
  } finally {
    restore();
  }
}
