/**
 * PEFT adapter folders (adapter_config.json + adapter_model.safetensors, else PEFT's older adapter_model.bin) on
 * opened Hugging Face folders, and the bytes of what fine-tuning writes: an adapter folder, or a Hugging Face
 * folder's weights under its own names. Browser-safe: sources in, bytes out (the Node writers are in ./node.ts).
 */
import { readPytorch } from '../io/pytorch.ts';
import { readSafetensors, writeSafetensors } from '../io/safetensors.ts';
import {
  attachLora,
  detachLora,
  loadLoraStateDict,
  loraConfigJson,
  loraStateDict,
  parseLoraConfig,
  type AttachedLora,
  type PeftLoraConfig,
} from '../models/hf/peft.ts';
import type { OpenedFolder } from './open.ts';
import { folderExists, readBytes, readJson, runAsync, runSync, type FolderSource, type Steps } from './source.ts';
import { FolderError } from './spec.ts';
import { tunable, type Tunable } from './tunable.ts';

/** The files of a PEFT adapter folder. */
export const ADAPTER_FILES = {
  config: 'adapter_config.json',
  weights: 'adapter_model.safetensors',
  /** PEFT before safetensors: torch.save of the same tensors. */
  pytorchWeights: 'adapter_model.bin',
} as const;

/** An adapter folder as read: its config and its tensors (PEFT's names), not yet on a model. */
export interface AdapterFiles {
  config: PeftLoraConfig;
  tensors: Record<string, import('../tensor/tensor.ts').Tensor>;
  /** The weights file's name as the source names it (for messages). */
  weightsName: string;
}

/** Read an adapter folder through `src`: adapter_config.json checked first, then its weights. */
export function* readAdapterSteps(src: FolderSource): Steps<AdapterFiles> {
  if (!(yield* folderExists(src))) throw new FolderError('', `adapter folder not found: ${src.label}`);
  const json = yield* readJson(src, ADAPTER_FILES.config);
  const cname = src.name(ADAPTER_FILES.config);
  if (json === undefined)
    throw new FolderError(ADAPTER_FILES.config, `adapter config not found: ${cname} (a PEFT adapter folder holds it)`);
  let config: PeftLoraConfig;
  try {
    config = parseLoraConfig(json, cname);
  } catch (e) {
    throw new FolderError(ADAPTER_FILES.config, (e as Error).message);
  }
  for (const file of [ADAPTER_FILES.weights, ADAPTER_FILES.pytorchWeights]) {
    const bytes = yield* readBytes(src, file);
    if (bytes === undefined) continue;
    const name = src.name(file);
    try {
      const { tensors } = file === ADAPTER_FILES.weights ? readSafetensors(bytes) : readPytorch(bytes, name);
      return { config, tensors, weightsName: name };
    } catch (e) {
      const msg = (e as Error).message;
      throw new FolderError(file, msg.startsWith(name) ? msg : `${name}: ${msg}`);
    }
  }
  throw new FolderError(
    ADAPTER_FILES.weights,
    `adapter weights not found: ${src.name(ADAPTER_FILES.weights)} (nor ${ADAPTER_FILES.pytorchWeights})`,
  );
}

/** An adapter folder read asynchronously (any source). */
export function readAdapter(src: FolderSource): Promise<AdapterFiles> {
  return runAsync(readAdapterSteps(src));
}

/** An adapter folder read synchronously (a Node directory, contents in memory). */
export function readAdapterSync(src: FolderSource): AdapterFiles {
  return runSync(readAdapterSteps(src));
}

/**
 * Put a read adapter on an opened folder's model: the pairs attached where its config says, its tensors loaded,
 * the base frozen. With `merge` (what inference wants: no cost per token), each ΔW is then added into its weight
 * and the pairs removed, as PEFT's merge_and_unload. Returns the attachment (its pairs are gone after a merge).
 */
export function applyAdapter(opened: OpenedFolder | Tunable, adapter: AdapterFiles, merge: boolean): AttachedLora {
  const t = 'task' in opened ? opened : tunable(opened);
  let attached: AttachedLora;
  try {
    attached = attachLora(t.model, t.sites(), adapter.config, t.saveable());
  } catch (e) {
    throw new FolderError(ADAPTER_FILES.config, `${ADAPTER_FILES.config}: ${(e as Error).message}`);
  }
  try {
    loadLoraStateDict(attached, adapter.tensors, adapter.weightsName);
  } catch (e) {
    detachLora(attached, false);
    throw new FolderError(ADAPTER_FILES.weights, (e as Error).message);
  }
  if (merge) detachLora(attached, true);
  return attached;
}

/** An attached adapter's two files as PEFT writes them: adapter_config.json's text, adapter_model.safetensors. */
export function adapterFiles(a: AttachedLora): { config: string; weights: Uint8Array } {
  const json = loraConfigJson(a.config, a.fanInFanOut);
  return {
    config: `${JSON.stringify(json, null, 2)}\n`,
    weights: writeSafetensors(loraStateDict(a), { metadata: { format: 'pt' } }),
  };
}

/** A fine-tuned model's model.safetensors under its family's Hugging Face names (transformers opens it). */
export function hfWeightsFile(t: Tunable): Uint8Array {
  return writeSafetensors(t.hfStateDict(), { metadata: { format: 'pt' } });
}
