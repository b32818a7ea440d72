/**
 * The training-step workloads of `npm run bench` (bench/index.ts), also timed by bench/ab-step.ts: one
 * step of a translation model on 128 sentence pairs of 32 tokens (4,096 target positions, some
 * padded), cross-entropy with label smoothing 0.1, Adam, at two shapes:
 * - the small model: Seq2Seq dModel 256, 4 heads, 3+3 layers, dFf 1024, vocabulary 8000, dropout 0.1;
 * - the shipped EN→DE recipe (issue 12's r2-wu, `PRESETS.seq2seq['multi30k-wu']`): dModel 128, 4 heads,
 *   4+4 layers, dFf 512, vocabulary 8000, dropout 0.3 on sub-layer outputs and embeddings only
 *   (attention and activation dropout 0), AdamW weight decay 1e-4.
 */
import { F, manualSeed, models, optim, setBackend, tensor } from '../src/index.ts';
import { PRESETS } from '../src/train/presets.ts';

/** A model's shape and its optimiser's weight decay (AdamW when above 0, else Adam). */
export type TrainShape = models.Seq2SeqConfig & { weightDecay: number };

export const SMALL: TrainShape = {
  ...models.MULTI30K_SMALL,
  vocabSize: 8000,
  dModel: 256,
  nhead: 4,
  numEncoderLayers: 3,
  numDecoderLayers: 3,
  dimFeedforward: 1024,
  dropout: 0.1,
  weightDecay: 0,
};

const WU = PRESETS.seq2seq['multi30k-wu']!;
/** The shipped recipe's model, vocabulary and weight decay, as `qkv train --preset multi30k-wu` builds them. */
export const RECIPE: TrainShape = { ...WU.model, vocabSize: WU.vocabSize, weightDecay: WU.recipe.weightDecay ?? 0 };

/** B sentences of Tn token ids (padding 0 at the end of 7 in 8 of them), the same on every run. */
export function batchIds(vocab: number, B: number, Tn: number): number[] {
  const ids: number[] = [];
  for (let b = 0; b < B; b++)
    for (let t = 0; t < Tn; t++) ids.push(t < Tn - (b % 8) ? 4 + ((b * 31 + t * 17) % (vocab - 4)) : 0);
  return ids;
}

/** A seeded model of `shape` on backend `be`, and one training step on a B×Tn batch (returns the loss). */
export function trainer(
  be: string,
  shape: TrainShape,
  B: number,
  Tn: number,
): { step: () => number; model: models.Seq2Seq } {
  setBackend(be);
  manualSeed(1);
  const { weightDecay, ...cfg } = shape;
  const model = new models.Seq2Seq(cfg);
  const opt = new (weightDecay > 0 ? optim.AdamW : optim.Adam)(model.parameters(), {
    lr: 1e-4,
    betas: [0.9, 0.98],
    eps: 1e-9,
    weightDecay,
  });
  const ids = tensor(new Int32Array(batchIds(cfg.vocabSize, B, Tn)), [B, Tn]);
  const step = () => {
    const loss = F.crossEntropy(model.forward(ids, ids), ids, { ignoreIndex: 0, labelSmoothing: 0.1 });
    opt.zeroGrad();
    loss.backward();
    opt.step();
    return loss.item();
  };
  return { step, model };
}
