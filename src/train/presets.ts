/**
 * Named training setups, one table for both kinds of model (nanoGPT's configs: configuration is
 * data, one training loop): a model shape, a vocabulary size, a recipe and the loop's cadence. The
 * CLI parses `qkv train --preset NAME` into `PRESETS.seq2seq[NAME]` and `qkv train-lm --preset NAME`
 * into `PRESETS.lm[NAME]`; flags override single fields.
 */
import { GPT_SMALL, GPT_TINY, type GPTConfig } from '../models/gpt.ts';
import { MULTI30K_SMALL, PAPER_BASE, type Seq2SeqConfig } from '../models/seq2seq.ts';
import type { LmTrainerOptions } from './lm.ts';
import type { Seq2SeqTrainerOptions } from './trainer.ts';

/** What every preset gives the training loop (src/train/loop.ts). */
interface PresetBase<Config, Recipe> {
  /** The model; its vocabulary fields are replaced by the tokenizer's. */
  model: Config;
  /** The trainer's options that differ from its defaults (Seq2SeqTrainer's are PAPER_RECIPE). */
  recipe: Partial<Recipe>;
  /** Optimiser steps to train for (fewer if an early stop comes first). */
  maxSteps: number;
  /** Evaluate on val every this many steps and at the last step, keeping the best weights. */
  evalEvery: number;
  /** Commit the resumable training state (and a checkpoint, for translation) every this many steps and at the last. */
  saveEvery: number;
}

/** A translation model's setup (`qkv train`). */
export interface Seq2SeqPreset extends PresetBase<Seq2SeqConfig, Seq2SeqTrainerOptions> {
  /** Joint EN+DE BPE vocabulary to learn. */
  vocabSize: number;
  /** Checkpoints kept for averaging (§6.1 averages the last 5). */
  keep: number;
  /** Split punctuation from words before BPE (default false). */
  splitPunctuation?: boolean;
  /** Stop after this many evaluations without a better val BLEU (0 or absent: never). */
  patience?: number;
  /** Average the last `keep` checkpoints (§6.1, the default) or the `keep` best by val BLEU. */
  average?: 'last' | 'best';
}

/** A language model's setup (`qkv train-lm`). */
export interface LmPreset extends PresetBase<GPTConfig, LmTrainerOptions> {
  /** Vocabulary to learn when the tokenizer is BPE. */
  bpeVocabSize: number;
}

const SEQ2SEQ: Record<string, Seq2SeqPreset> = {
  /**
   * Multi30K on a CPU: ~29k pairs make ~130 batches of 4,096 padded tokens per epoch, so the
   * paper's 4,000 warmup steps (30 epochs) are scaled to 800, and 3,000 steps are ~23 epochs.
   * lrFactor 0.5 peaks at 1.1e-3 (post-norm at this size is unstable near the 2.2e-3 of factor 1).
   */
  'multi30k-small': {
    model: MULTI30K_SMALL,
    vocabSize: 8000,
    recipe: { maxTokens: 4096, warmup: 800, lrFactor: 0.5, labelSmoothing: 0.1, seed: 1 },
    maxSteps: 3000,
    evalEvery: 250,
    saveEvery: 125,
    keep: 5,
  },
  /**
   * The recipe chosen on val in issue 12 (the README's `r2-wu`), which trained both shipped
   * translation models (with `--direction en-fr` for French): Wu et al. 2021's small shape (dModel
   * 128, 4 heads, 4+4 layers, dFf 512) with fairseq's IWSLT regularisation (dropout 0.3 on sub-layer
   * outputs and embeddings, none on attention weights or after the activation, AdamW weight decay
   * 1e-4), punctuation split from words before BPE, early stop after 8 evaluations without a better
   * val BLEU, and the 5 best checkpoints averaged, kept if that scores at least as well.
   */
  'multi30k-wu': {
    model: {
      ...MULTI30K_SMALL,
      dModel: 128,
      numEncoderLayers: 4,
      numDecoderLayers: 4,
      dimFeedforward: 512,
      dropout: 0.3,
      attentionDropout: 0,
      activationDropout: 0,
    },
    vocabSize: 8000,
    splitPunctuation: true,
    recipe: { maxTokens: 4096, warmup: 800, lrFactor: 0.5, labelSmoothing: 0.1, seed: 1, weightDecay: 1e-4 },
    maxSteps: 8000,
    evalEvery: 250,
    saveEvery: 125,
    keep: 5,
    patience: 8,
    average: 'best',
  },
  /** The paper's base model (§6.1, Table 3): 100k steps of ~25k tokens, warmup 4000. */
  'paper-base': {
    model: PAPER_BASE,
    vocabSize: 37000,
    recipe: { maxTokens: 25000, warmup: 4000, lrFactor: 1, labelSmoothing: 0.1, seed: 1 },
    maxSteps: 100000,
    evalEvery: 5000,
    saveEvery: 1000,
    keep: 5,
  },
  /** Seconds-long smoke test of the whole pipeline. */
  tiny: {
    model: { ...MULTI30K_SMALL, dModel: 32, nhead: 2, numEncoderLayers: 1, numDecoderLayers: 1, dimFeedforward: 64 },
    vocabSize: 400,
    recipe: { maxTokens: 1024, warmup: 20, lrFactor: 1, labelSmoothing: 0.1, seed: 1 },
    maxSteps: 20,
    evalEvery: 10,
    saveEvery: 10,
    keep: 2,
  },
};

const LM: Record<string, LmPreset> = {
  /** Seconds-long smoke test of the whole pipeline. */
  tiny: {
    model: GPT_TINY,
    bpeVocabSize: 500,
    recipe: { batchSize: 8, lr: 3e-3, minLr: 3e-4, warmup: 10, seed: 1 },
    maxSteps: 100,
    evalEvery: 50,
    saveEvery: 50,
  },
  /** Character-level Multi30K English on a 2-core CPU: 2,000 steps of 16 × 128 characters (~2 epochs). */
  small: {
    model: GPT_SMALL,
    bpeVocabSize: 2000,
    recipe: { batchSize: 16, lr: 2e-3, minLr: 2e-4, warmup: 100, seed: 1 },
    maxSteps: 2000,
    evalEvery: 250,
    saveEvery: 100,
  },
};

/** Every preset, by the kind of model it trains. */
export const PRESETS: {
  /** Translation presets, by `qkv train --preset` name: multi30k-small, multi30k-wu, paper-base, tiny. */
  readonly seq2seq: Record<string, Seq2SeqPreset>;
  /** Language-model presets, by `qkv train-lm --preset` name: tiny, small. */
  readonly lm: Record<string, LmPreset>;
} = {
  seq2seq: SEQ2SEQ,
  lm: LM,
};
