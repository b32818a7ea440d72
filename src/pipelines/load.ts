/**
 * Opening the folder a pipeline runs, through the folder module's one door (openFolder): in Node a
 * path is a directory source (src/folder/node.ts `dirSource`, the source the CLI's readers use); a
 * URL, picked File objects or contents are sources too. The Node half is imported only when a path is
 * given, so a browser bundle never pulls in node:fs. A folder of the wrong kind is refused once its
 * config.json is read, before its tokenizer.
 */
import { readAdapter, type AdapterFiles } from '../folder/adapter.ts';
import type { LoadedLm } from '../folder/gpt.ts';
import {
  ofKind,
  openFolder,
  toSource,
  type FolderInput,
  type FolderSource,
  type OpenedM2M100,
  type OpenedT5,
  type OpenedEncoder,
  type OpenedMarian,
  type OpenedSeq2Seq,
} from '../folder/open.ts';
import type { HeadKind } from '../models/hf/bert.ts';
import { FILES, FolderError, type FolderKind } from '../folder/spec.ts';
import { backendNames, getBackend, setBackend } from '../backend/backend.ts';
import type { Module } from '../nn/module.ts';

type NodeFolder = typeof import('../folder/node.ts');

/** Whether `source` is a path on this machine: a string that is no URL, in Node. */
function isNodePath(source: FolderInput): source is string {
  const node = typeof process !== 'undefined' && typeof process.versions?.node === 'string';
  return node && typeof source === 'string' && !/^(https?|blob|data):/i.test(source);
}

async function nodeFolder(): Promise<NodeFolder> {
  // A specifier built at run time, so that bundlers cannot follow it (a literal in either branch of a
  // condition is followed: Vite then pulled node:fs into the explorer's bundle); tsx runs the .ts file,
  // dist the .js one.
  const spec = `${['..', 'folder', 'node'].join('/')}.${import.meta.url.endsWith('.ts') ? 'ts' : 'js'}`;
  return (await import(/* @vite-ignore */ /* webpackIgnore: true */ spec)) as NodeFolder;
}

const KIND_NAMES: Record<FolderKind, string> = {
  seq2seq: 'a translation model',
  gpt: 'a qkv language model',
  'hf-gpt2': 'a Hugging Face GPT-2 model',
  marian: 'a Hugging Face Marian translation model',
  m2m100: 'a Hugging Face M2M100 / NLLB translation model',
  t5: 'a Hugging Face T5 / Flan-T5 model',
  'hf-encoder': 'a Hugging Face encoder (BERT, RoBERTa, XLM-R, DistilBERT)',
};

function wrongKind(task: string, kind: FolderKind, where: string, wanted: string): FolderError {
  return new FolderError(
    FILES.config,
    `pipeline('${task}'): ${where}/${FILES.config} describes ${KIND_NAMES[kind]}; '${task}' takes ${wanted}`,
  );
}

function label(source: FolderInput): string {
  return typeof source === 'string' ? source.replace(/\/$/, '') : source instanceof URL ? source.href : 'the folder';
}

/** The source of `source`: a path on this machine read from disk (Node), else as the folder module takes it. */
async function sourceOf(source: FolderInput): Promise<FolderSource> {
  return isNodePath(source) ? (await nodeFolder()).dirSource(source) : toSource(source);
}

/** A PEFT adapter folder (`pipeline(task, base, { adapter })`) read from any source, as a model folder is. */
export async function readAdapterFolder(input: FolderInput): Promise<AdapterFiles> {
  return readAdapter(await sourceOf(input));
}

/**
 * `open()` run on a CPU backend when the current backend's device reads back only asynchronously (a GPU), its
 * models then moved there (`module.to`): reading a folder checks and converts its weights on the host (finite
 * values, int8 rows, tied tables), as PyTorch loads a state dict on the CPU before `.to('cuda')`.
 */
async function openForCurrentDevice<T extends Opened>(open: () => Promise<T>): Promise<T> {
  const target = getBackend();
  if (target.device.readSync !== undefined) return open();
  await setBackend(hostBackendName());
  let opened: T;
  try {
    opened = await open();
  } finally {
    await setBackend(target.name);
  }
  return movedTo(opened, target.name);
}

/** What a folder read gives: its model, and an ensemble's members. */
type Opened = { model: Module; members?: Module[] };

/** The CPU backend a folder is read on: wasm where it loaded, else js. */
function hostBackendName(): string {
  return backendNames().includes('wasm') ? 'wasm' : 'js';
}

function movedTo<T extends Opened>(opened: T, name: string): T {
  for (const m of new Set([opened.model, ...(opened.members ?? [])])) m.to(name);
  return opened;
}

/**
 * openForCurrentDevice for a synchronous read (the CLI's Node readers): the CPU backends are registered, so
 * switching to one and back takes effect at once.
 */
export function readForCurrentDevice<T extends Opened>(read: () => T): T {
  const target = getBackend();
  if (target.device.readSync !== undefined) return read();
  void setBackend(hostBackendName());
  let opened: T;
  try {
    opened = read();
  } finally {
    void setBackend(target.name);
  }
  return movedTo(opened, target.name);
}

/**
 * A translation folder with its ensemble (unless `ensemble` is false), as `qkv translate --model DIR` loads it, or a
 * Hugging Face Marian folder. Another kind is refused once its config.json is read.
 */
export async function openTranslation(
  source: FolderInput,
  ensemble = true,
  /** Run on the opened models where they were read (the CPU), before they move to a GPU: quantizing. */
  prepare?: (opened: OpenedSeq2Seq | OpenedMarian | OpenedM2M100) => void,
): Promise<OpenedSeq2Seq | OpenedMarian | OpenedM2M100> {
  const wanted = "a translation model folder (format 'qkv-seq2seq', or Hugging Face Marian, M2M100 / NLLB)";
  const src = await sourceOf(source);
  return openForCurrentDevice(async () => {
    const opened = await openFolder(src, {
      ensemble,
      accept: (kind) => {
        if (kind === 't5')
          throw wrongKind(
            'translation',
            kind,
            label(source),
            `${wanted}: a T5 folder translates by transformers' task names, pipeline('translation_en_to_de', ` +
              "folder) (the translation_* keys of its config.json's task_specific_params)",
          );
        if (kind !== 'seq2seq' && kind !== 'marian' && kind !== 'm2m100')
          throw wrongKind('translation', kind, label(source), wanted);
      },
    });
    const translation = ofKind(opened, 'seq2seq', 'marian', 'm2m100');
    prepare?.(translation);
    return translation;
  });
}

/**
 * A Hugging Face encoder folder (BERT, RoBERTa, XLM-R, DistilBERT) with the head a task needs ('none' for
 * feature-extraction: another head's weights are left unread). Another kind is refused once its config.json is read.
 */
export async function openEncoder(
  source: FolderInput,
  task: string,
  head: Exclude<HeadKind, 'auto'>,
  /** As openTranslation's `prepare`. */
  prepare?: (opened: OpenedEncoder) => void,
): Promise<OpenedEncoder> {
  const src = await sourceOf(source);
  return openForCurrentDevice(async () => {
    const opened = await openFolder(src, {
      head,
      accept: (kind) => {
        if (kind !== 'hf-encoder')
          throw wrongKind(
            task,
            kind,
            label(source),
            "a Hugging Face encoder folder (model_type 'bert', 'roberta', " + "'xlm-roberta' or 'distilbert')",
          );
      },
    });
    const encoder = ofKind(opened, 'hf-encoder');
    prepare?.(encoder);
    return encoder;
  });
}

/** A Hugging Face T5 / Flan-T5 folder, for the text2text-generation pipeline. */
export async function openT5(source: FolderInput, task: string): Promise<OpenedT5> {
  const src = await sourceOf(source);
  return openForCurrentDevice(async () => {
    const opened = await openFolder(src, {
      accept: (kind) => {
        if (kind !== 't5') throw wrongKind(task, kind, label(source), "a Hugging Face T5 folder (model_type 't5')");
      },
    });
    return ofKind(opened, 't5');
  });
}

/** A language-model folder (qkv GPT or Hugging Face GPT-2), as `qkv generate --model DIR` loads it. */
export async function openLanguageModel(
  source: FolderInput,
  /** As openTranslation's `prepare`. */
  prepare?: (lm: LoadedLm & { kind: 'gpt' | 'hf-gpt2' }) => void,
): Promise<LoadedLm & { kind: 'gpt' | 'hf-gpt2' }> {
  const src = await sourceOf(source);
  return openForCurrentDevice(async () => {
    const opened = await openFolder(src, {
      accept: (kind) => {
        if (kind === 'seq2seq' || kind === 'marian' || kind === 'm2m100')
          throw wrongKind(
            'text-generation',
            kind,
            label(source),
            "a language model folder (format 'qkv-gpt', or Hugging Face GPT-2)",
          );
      },
    });
    const lm = ofKind(opened, 'gpt', 'hf-gpt2');
    prepare?.(lm);
    return lm;
  });
}
