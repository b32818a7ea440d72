/**
 * What fine-tuning needs of an opened folder, one entry per Hugging Face family: its task (the loss it trains
 * with), its linear layers by Hugging Face module path (where LoRA goes, as PEFT names them), its weights under
 * Hugging Face's names (what a fine-tuned folder holds, so transformers opens it) and PEFT's task type.
 *
 * A Llama-family folder opens as kind 'hf-gpt2' (one GPT with switches) and is told apart here by its layout, so
 * that its LoRA sites and saved names are LlamaForCausalLM's, not GPT2LMHeadModel's.
 *
 * A BERT-style *ForSequenceClassification folder is the 'classify' task (train/finetune-data.ts ClassData), its head
 * offered to PEFT's modules_to_save. A new family (T5) adds a case here: its sites, its writer, its task.
 */
import type { Encoder } from '../models/encoder.ts';
import type { GPT } from '../models/gpt.ts';
import { encoderHfStateDict, encoderLinearSites, encoderSavedModules } from '../models/hf/bert.ts';
import type { GPTConfig } from '../models/gpt-config.ts';
import { gpt2HfStateDict, gpt2LinearSites } from '../models/hf/gpt2.ts';
import { llamaHfStateDict, llamaLinearSites } from '../models/hf/llama.ts';
import { marianHfStateDict, marianLinearSites } from '../models/hf/marian.ts';
import type { LinearSite, SavedModule } from '../models/hf/peft.ts';
import type { Seq2Seq } from '../models/seq2seq.ts';
import type { Tensor } from '../tensor/tensor.ts';
import type { OpenedEncoder, OpenedFolder, OpenedLm, OpenedMarian } from './open.ts';

/** What every family gives fine-tuning: its LoRA sites, its full-training modules, its weights under HF's names. */
interface TunableParts {
  /** The linear layers by Hugging Face module path: where LoRA goes, as PEFT names them. */
  sites(): LinearSite[];
  /** The modules modules_to_save may train in full (a classifier's head; none elsewhere). */
  saveable(): SavedModule[];
  /** The weights under Hugging Face's names: what a fine-tuned folder holds. */
  hfStateDict(): Record<string, Tensor>;
}

/** An opened Hugging Face folder as fine-tuning sees it. */
export type Tunable = TunableParts &
  (
    | {
        kind: 'hf-gpt2';
        /** Next-token prediction on a text stream. */
        task: 'lm';
        model: GPT;
        opened: OpenedLm;
        /** PEFT's task_type of an adapter of this model. */
        taskType: 'CAUSAL_LM';
      }
    | {
        /** A Llama-family folder (model_type llama, qwen2, mistral): opened as kind 'hf-gpt2', GPT with switches. */
        kind: 'hf-llama';
        task: 'lm';
        model: GPT;
        opened: OpenedLm;
        taskType: 'CAUSAL_LM';
      }
    | {
        /** A BERT, RoBERTa, XLM-R or DistilBERT *ForSequenceClassification folder (single-label). */
        kind: 'hf-encoder';
        /** `text<TAB>label`: cross-entropy of the head's logits against the label's id. */
        task: 'classify';
        model: Encoder;
        opened: OpenedEncoder;
        /** PEFT's SEQ_CLS: its modules_to_save trains the head ('classifier') in full beside the pairs. */
        taskType: 'SEQ_CLS';
      }
    | {
        kind: 'marian';
        /** Translation pairs. */
        task: 'seq2seq';
        model: Seq2Seq;
        opened: OpenedMarian;
        taskType: 'SEQ_2_SEQ_LM';
      }
  );

/** The fine-tuning view of an opened folder; qkv's own kinds are refused (they train with qkv train / train-lm). */
export function tunable(opened: OpenedFolder): Tunable {
  if (opened.kind === 'hf-gpt2') {
    const model = opened.model;
    const layout = decoderLayout(model.config);
    if (layout === 'llama')
      return {
        kind: 'hf-llama',
        task: 'lm',
        model,
        opened,
        taskType: 'CAUSAL_LM',
        sites: () => llamaLinearSites(model),
        saveable: () => [],
        hfStateDict: () => llamaHfStateDict(model.stateDict(), model.config),
      };
    return {
      kind: 'hf-gpt2',
      task: 'lm',
      model,
      opened,
      taskType: 'CAUSAL_LM',
      sites: () => gpt2LinearSites(model),
      saveable: () => [],
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
      saveable: () => [],
      hfStateDict: () => marianHfStateDict(model.stateDict(), model.config),
    };
  }
  if (opened.kind === 'hf-encoder') {
    const model = opened.model;
    const { family, problemType } = opened.hf;
    if (model.config.head.kind !== 'classification')
      throw new Error(
        `fine-tuning an encoder takes a *ForSequenceClassification folder (text<TAB>label); this ${family} folder's ` +
          `head is ${model.config.head.kind === 'none' ? 'none (a bare model)' : model.config.head.kind}`,
      );
    if (problemType !== 'single_label_classification')
      throw new Error(
        `fine-tuning a classifier: problem_type ${problemType} is not supported (qkv trains single-label ` +
          'classifiers, the cross-entropy of one label per text)',
      );
    return {
      kind: 'hf-encoder',
      task: 'classify',
      model,
      opened,
      taskType: 'SEQ_CLS',
      sites: () => encoderLinearSites(model, family),
      saveable: () => encoderSavedModules(model, family),
      hfStateDict: () => encoderHfStateDict(model.stateDict(), family, model.config),
    };
  }
  throw new Error(
    'fine-tuning takes a Hugging Face folder (GPT-2, Llama, Qwen2, Mistral, Marian, BERT-style classifiers); ' +
      `this is qkv's own ${opened.kind} folder: ` +
      `continue it with ${opened.kind === 'gpt' ? 'qkv train-lm' : 'qkv train --init-from'}`,
  );
}

/**
 * Which Hugging Face layout a decoder of kind 'hf-gpt2' has, from the switches its config.json set
 * (models/hf/gpt2.ts, models/hf/llama.ts): GPT-2's (learned positions, LayerNorm, GELU MLP) or the Llama family's
 * (rotary positions, RMSNorm, SwiGLU). A mix of the two is neither family's and is refused.
 */
function decoderLayout(c: GPTConfig): 'gpt2' | 'llama' {
  const gpt2 = c.positions === 'learned' && (c.norm ?? 'layer') === 'layer' && (c.mlp ?? 'gelu') === 'gelu';
  const llama = c.positions === 'rotary' && c.norm === 'rms' && c.mlp === 'swiglu';
  if (gpt2) return 'gpt2';
  if (llama) return 'llama';
  throw new Error(
    `fine-tuning: this decoder (positions ${c.positions}, norm ${c.norm ?? 'layer'}, mlp ${c.mlp ?? 'gelu'}) ` +
      "is neither GPT-2's layout nor the Llama family's: qkv fine-tunes those two",
  );
}
