/**
 * The searches the viz functions run (greedy, beam, Hugging Face's generate()) with every step's
 * log-probabilities read back by `await t.data()`: the path a model on a device without synchronous
 * reads (a GPU) decodes on. The steps do not wait for the event loop (pausing.ts's searches do, so that a
 * signal is heard; a timer's pause costs up to 4 ms a step in a browser, longer than a small model's step),
 * so on a CPU device these are greedy, beamSearch and generateHf themselves: the same steps, the same bits.
 */
import { noGrad } from '../autograd/grad-mode.ts';
import { generateHfAsync, sourceIds, type HfSearchOptions } from '../decode/hf-search.ts';
import {
  beamSearchAsync,
  checkBeamOptions,
  encodeSources,
  greedySearchAsync,
  prepareSearch,
  readsSync,
  type BeamSearchOptions,
  type BeamSearchResult,
  type DecodeOptions,
  type DecodeResult,
  type Models,
} from '../decode/search.ts';
import type { AsyncStepper, Stepper } from '../decode/stepper.ts';
import type { Seq2Seq } from '../models/seq2seq.ts';
import { enterEvalMode } from '../nn/module.ts';
import type { Tensor } from '../tensor/tensor.ts';

/**
 * `stepper` as an AsyncStepper: each step recorded without gradients, its values read back asynchronously
 * (`stepAsync`), or where the model's device reads synchronously (`sync`: a CPU) taken by `step` itself, with
 * no copy, as the synchronous searches take them.
 */
export function readingStepper(stepper: Stepper, sync: boolean): AsyncStepper {
  return {
    get rows() {
      return stepper.rows;
    },
    get vocabSize() {
      return stepper.vocabSize;
    },
    reorder: (rows) => noGrad(() => stepper.reorder(rows)),
    step: (last) =>
      noGrad(() => (stepper.stepAsync && !sync ? stepper.stepAsync(last) : Promise.resolve(stepper.step(last)))),
  };
}

/**
 * The checks, the encoding and eval mode of search.ts's run(), the search driven asynchronously. `srcIds`
 * are src's ids on the host (the caller made src from them: a GPU's src cannot be read synchronously).
 */
async function run<R>(
  model: Models,
  src: Tensor,
  srcIds: ArrayLike<number>,
  options: DecodeOptions,
  search: (stepper: AsyncStepper, maxLens: number[], padId: number, members: readonly Seq2Seq[]) => Promise<R>,
): Promise<R> {
  const { members, maxLens, padId } = prepareSearch(model, src, options, srcIds);
  const restore = enterEvalMode(members);
  try {
    const stepper = noGrad(() => encodeSources(members, src, options));
    return await search(readingStepper(stepper, readsSync(members)), maxLens, padId, members);
  } finally {
    restore();
  }
}

/** search.ts's greedy, read back asynchronously. */
export function greedyReading(
  model: Models,
  src: Tensor,
  srcIds: ArrayLike<number>,
  options: DecodeOptions,
): Promise<DecodeResult> {
  return run(model, src, srcIds, options, (stepper, maxLens, padId) =>
    greedySearchAsync(stepper, maxLens, { ...options, padId }),
  );
}

/** search.ts's beamSearch, read back asynchronously. */
export function beamSearchReading(
  model: Models,
  src: Tensor,
  srcIds: ArrayLike<number>,
  options: BeamSearchOptions,
): Promise<BeamSearchResult> {
  checkBeamOptions(options);
  return run(model, src, srcIds, options, (stepper, maxLens, padId) =>
    beamSearchAsync(stepper, maxLens, { ...options, padId }),
  );
}

/** hf-search.ts's generateHf, read back asynchronously (the same cap of maxLength by the position table). */
export function generateHfReading(
  model: Models,
  src: Tensor,
  srcIds: ArrayLike<number>,
  options: HfSearchOptions,
): Promise<BeamSearchResult> {
  const ids = { bosId: options.decoderStartId, eosId: options.eosId };
  return run(model, src, srcIds, ids, (stepper, _maxLens, padId, members) => {
    const maxLength = Math.min(options.maxLength, Math.min(...members.map((m) => m.config.maxLen)) + 1);
    return generateHfAsync(stepper, src.shape[0], {
      ...options,
      ...sourceIds(options, srcIds, src.shape, padId),
      maxLength,
      padId,
    });
  });
}
