/**
 * A translation model's training run (`qkv train`): its plan (what config.json `training` records, so a
 * resumed run needs no flags again), the BPE vocabulary and model the plan names, then the training loop
 * of ./loop.ts with val BLEU as its metric. The command (src/cli/commands/train.ts) turns its flags into
 * the plan and reads the corpus; this file knows no flags.
 */
import type { Pair } from '../data/batching.ts';
import { validationBleu } from '../decode/batch.ts';
import { pathNamer, readJsonIn, readSeq2SeqShape, saveFolderWeights, saveModelDir } from '../folder/node.ts';
import type { LoadedModel } from '../folder/seq2seq.ts';
import { notFound } from '../folder/seq2seq.ts';
import { FILES } from '../folder/spec.ts';
import { Seq2Seq, type Seq2SeqConfig } from '../models/seq2seq.ts';
import { manualSeed } from '../tensor/random.ts';
import { BpeTokenizer } from '../text/bpe.ts';
import { FRESH, keepBest, readHistory, resumeState, trainLoop, writeHistory, type ProgressBar } from './loop.ts';
import {
  SEQ2SEQ_SMOOTHING,
  Seq2SeqTrainer,
  VAL_BLEU,
  evaluateSeq2Seq,
  type Seq2SeqHistoryEntry,
  type Seq2SeqStepResult,
} from './trainer.ts';

/** What a run was started with, saved in config.json `training`, so --resume needs no flags again. */
export interface RunPlan {
  preset: string;
  recipe: Record<string, unknown>;
  maxSteps: number;
  evalEvery: number;
  saveEvery: number;
  patience: number;
  average: 'last' | 'best';
  keep: number;
  bleuSentences: number;
  /** `separate`: one vocabulary of vocabSize per language (absent in runs from before it existed: joint). */
  bpe: { vocabSize: number; splitPunctuation: boolean; separate?: boolean };
  data: string;
  direction: string;
  /** Set by --init-from: the folder the run started from and the step of the schedule it started at. */
  init?: { from: string; step: number };
}

/** A run folder's saved plan (config.json `training`, as far as it goes); a FolderError when config.json is missing. */
export function savedPlan(dir: string): (Partial<RunPlan> & { recipe?: Record<string, unknown> }) | undefined {
  const c = readJsonIn(dir, FILES.config);
  if (c === undefined) throw notFound(FILES.config, pathNamer(dir));
  return (c as { training?: Partial<RunPlan> & { recipe?: Record<string, unknown> } }).training;
}

/** Token ids of sentence pairs; `target` encodes the target side (a separate vocabulary's tokenizer). */
export function encodePairs(
  tok: BpeTokenizer,
  src: string[],
  tgt: string[],
  maxLen: number,
  target: BpeTokenizer = tok,
): Pair[] {
  // Keep room for BOS/EOS; Multi30K never comes near the limit, other corpora may.
  return src.map((s, i) => ({ src: tok.encode(s).slice(0, maxLen), tgt: target.encode(tgt[i]).slice(0, maxLen - 1) }));
}

/**
 * A Seq2Seq config's vocabulary fields for its tokenizers: the source's size and padding id, and
 * tgtVocabSize only when the target has a tokenizer of its own (separate vocabularies).
 */
export function vocabularyConfig(
  tokenizer: BpeTokenizer,
  targetTokenizer: BpeTokenizer = tokenizer,
): Pick<Seq2SeqConfig, 'vocabSize' | 'padId' | 'tgtVocabSize'> {
  return {
    vocabSize: tokenizer.vocabSize,
    padId: tokenizer.padId,
    ...(targetTokenizer !== tokenizer && { tgtVocabSize: targetTokenizer.vocabSize }),
  };
}

/** Source and target sentences, line for line. */
export interface ParallelText {
  src: string[];
  tgt: string[];
}

export interface Seq2SeqRun {
  /** The run folder (checked beforehand with ./loop.ts `checkRunFolder`). */
  out: string;
  plan: RunPlan;
  /** Continue the run in `out` from its training state (its model shape and tokenizers from the folder). */
  resume: boolean;
  /** The --init-from folder, loaded: the run starts from its weights, shape and tokenizers (plan.init says where). */
  init: LoadedModel | null;
  /** A new run's model shape (the plan's BPE vocabularies are learned here); null when resumed or initialised. */
  shape: Seq2SeqConfig | null;
  /** The plan's corpus (plan.data, plan.direction), read. */
  corpus: { train: ParallelText; val: ParallelText };
  bar: ProgressBar;
  log: (line: string) => void;
}

/** Train to the plan's end: history.json, checkpoints and model.safetensors in `out`. */
export async function runSeq2Seq(r: Seq2SeqRun): Promise<void> {
  const { plan, init, log } = r;
  const { train: trainText, val: valText } = r.corpus;
  const [srcLang, tgtLang] = plan.direction.split('-');
  let tokenizer: BpeTokenizer;
  let targetTokenizer: BpeTokenizer;
  let model: Seq2Seq;
  if (r.resume) {
    ({ tokenizer, targetTokenizer, model } = readSeq2SeqShape(r.out)); // weights come from the training state below
  } else if (init) {
    ({ tokenizer, targetTokenizer, model } = init);
  } else {
    if (!r.shape) throw new Error('runSeq2Seq: a new run needs its model shape');
    const { vocabSize, splitPunctuation, separate } = plan.bpe;
    const how =
      `${splitPunctuation ? ' (punctuation split from words)' : ''} on ` + `${trainText.src.length} sentence pairs`;
    if (separate) {
      log(
        `learning separate ${srcLang.toUpperCase()} and ` +
          `${tgtLang.toUpperCase()} BPE vocabularies of ${vocabSize} each${how}`,
      );
      tokenizer = BpeTokenizer.learn(trainText.src, { vocabSize, splitPunctuation });
      targetTokenizer = BpeTokenizer.learn(trainText.tgt, { vocabSize, splitPunctuation });
    } else {
      log(`learning a joint ${srcLang.toUpperCase()}+${tgtLang.toUpperCase()} BPE vocabulary of ${vocabSize}${how}`);
      tokenizer = targetTokenizer = BpeTokenizer.learn([...trainText.src, ...trainText.tgt], {
        vocabSize,
        splitPunctuation,
      });
    }
    manualSeed((plan.recipe.seed as number | undefined) ?? 1);
    model = new Seq2Seq({ ...r.shape, ...vocabularyConfig(tokenizer, targetTokenizer) });
  }
  const ids = { padId: tokenizer.padId, bosId: targetTokenizer.bosId, eosId: targetTokenizer.eosId };
  const tokenizers = { source: tokenizer, target: targetTokenizer };
  const trainPairs = encodePairs(tokenizer, trainText.src, trainText.tgt, model.config.maxLen, targetTokenizer);
  const valPairs = encodePairs(tokenizer, valText.src, valText.tgt, model.config.maxLen, targetTokenizer);
  const trainer = new Seq2SeqTrainer(model, trainPairs, ids, plan.recipe);
  const training = { ...plan, recipe: trainer.options };
  let resumed = FRESH;
  if (r.resume) {
    resumed = resumeState(trainer, r.out);
    log(`resumed at step ${trainer.position.step} (epoch ${trainer.position.epoch})`);
  } else {
    saveModelDir(r.out, model, tokenizer, training, targetTokenizer);
  }
  if (!r.resume && plan.init) {
    // The run goes on from the folder's step: its learning rate and data order, and its history up
    // to there (so val BLEU and minutes continue); its weights are the run's best until beaten.
    const { from, step } = plan.init;
    trainer.startAt(step);
    const carried = readHistory(from, step, VAL_BLEU, 'qkv train');
    writeHistory(r.out, carried);
    saveFolderWeights(r.out, model);
    if (plan.average === 'best' && carried.at(-1)?.step === step)
      keepBest(r.out, model.stateDict(), carried, plan.keep, VAL_BLEU);
    log(
      `starting from ${from} at step ${step} (its weights, shape and ` +
        `tokenizers; a fresh ` +
        `optimiser)${carried.length ? `, with its ${carried.length} evaluations to there` : ''}`,
    );
  }
  const vocabulary =
    targetTokenizer === tokenizer
      ? `vocabulary ${tokenizer.vocabSize}`
      : `vocabularies ${tokenizer.vocabSize} (${srcLang}) and ${targetTokenizer.vocabSize} (${tgtLang})`;
  log(
    `${model.numParameters().toLocaleString('en-US')} parameters, ` +
      `${vocabulary}, ${trainer.stepsPerEpoch} batches per ` +
      `epoch${trainer.options.accum > 1 ? `, ${trainer.options.accum} batches per step` : ''}`,
  );

  const bleuSrc = valText.src.slice(0, plan.bleuSentences);
  const bleuRef = valText.tgt.slice(0, plan.bleuSentences);
  const bleuOn = `on ${Math.min(plan.bleuSentences, valText.src.length)} sentences`;
  await trainLoop<Seq2SeqStepResult, Seq2SeqHistoryEntry>({
    out: r.out,
    command: 'qkv train',
    trainer,
    maxSteps: plan.maxSteps,
    evalEvery: plan.evalEvery,
    saveEvery: plan.saveEvery,
    smoothing: SEQ2SEQ_SMOOTHING,
    resumed,
    metric: VAL_BLEU,
    patience: plan.patience,
    checkpoints: { keep: plan.keep, average: plan.average },
    countMinutes: true,
    evaluate: (step, ema, time) => {
      const valLoss = evaluateSeq2Seq(model, valPairs, ids, trainer.options.maxTokens);
      const bleu = validationBleu(model, tokenizers, bleuSrc, bleuRef);
      const entry = {
        step: step.step,
        epoch: step.epoch,
        trainLoss: ema,
        valLoss,
        bleu,
        seconds: time.sinceEval,
        minutes: time.minutes,
      };
      return { entry, detail: `, val BLEU ${bleu.toFixed(2)} ${bleuOn}` };
    },
    score: () => validationBleu(model, tokenizers, bleuSrc, bleuRef),
    averagedEntry: (bleu, averaged, kept, ema) => ({
      step: trainer.position.step,
      epoch: trainer.position.epoch,
      trainLoss: ema,
      valLoss: Number.NaN,
      bleu,
      seconds: 0,
      averaged,
      kept,
    }),
    bar: r.bar,
    barFields: () => ({ epoch: trainer.position.epoch }),
    log,
  });
  log(`done: ${r.out}`);
}
