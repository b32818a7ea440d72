/**
 * What fine-tuning needs of an opened folder, one entry per Hugging Face family: its task (the loss it trains
 * with), its linear layers by Hugging Face module path (where LoRA goes, as PEFT names them), its weights under
 * Hugging Face's names (what a fine-tuned folder holds, so transformers opens it) and PEFT's task type.
 *
 * A new family (BERT-style encoders with a classification head, Llama-style decoders, T5) adds a case here: its
 * key map's sites and writer, and its task ('classify' brings its data class in train/finetune-data.ts).
 */
import type { GPT } from '../models/gpt.ts';
import { gpt2HfStateDict, gpt2LinearSites } from '../models/hf/gpt2.ts';
import { marianHfStateDict, marianLinearSites } from '../models/hf/marian.ts';
import type { LinearSite } from '../models/hf/peft.ts';
import type { Seq2Seq } from '../models/seq2seq.ts';
import type { Tensor } from '../tensor/tensor.ts';
import type { OpenedFolder, OpenedLm, OpenedMarian } from './open.ts';

/** An opened Hugging Face folder as fine-tuning sees it. */
export type Tunable =
  | {
      kind: 'hf-gpt2';
      /** Next-token prediction on a text stream. */
      task: 'lm';
      model: GPT;
      opened: OpenedLm;
      /** PEFT's task_type of an adapter of this model. */
      taskType: 'CAUSAL_LM';
      sites(): LinearSite[];
      hfStateDict(): Record<string, Tensor>;
    }
  | {
      kind: 'marian';
      /** Translation pairs. */
      task: 'seq2seq';
      model: Seq2Seq;
      opened: OpenedMarian;
      taskType: 'SEQ_2_SEQ_LM';
      sites(): LinearSite[];
      hfStateDict(): Record<string, Tensor>;
    };

/** The fine-tuning view of an opened folder; qkv's own kinds are refused (they train with qkv train / train-lm). */
export function tunable(opened: OpenedFolder): Tunable {
  if (opened.kind === 'hf-gpt2') {
    const model = opened.model;
    return {
      kind: 'hf-gpt2',
      task: 'lm',
      model,
      opened,
      taskType: 'CAUSAL_LM',
      sites: () => gpt2LinearSites(model),
      hfStateDict: () => gpt2HfStateDict(model.stateDict()),
    };
  }
  if (opened.kind === 'marian') {
    const model = opened.model;
    return {
      kind: 'marian',
      task: 'seq2seq',
      model,
      opened,
      taskType: 'SEQ_2_SEQ_LM',
      sites: () => marianLinearSites(model, model.config),
      hfStateDict: () => marianHfStateDict(model.stateDict(), model.config),
    };
  }
  throw new Error(
    `fine-tuning takes a Hugging Face folder (GPT-2, Marian); this is qkv's own ${opened.kind} folder: ` +
      `continue it with ${opened.kind === 'gpt' ? 'qkv train-lm' : 'qkv train --init-from'}`,
  );
}
