/**
 * Opening the folder a pipeline runs, through the folder module's one door (openFolder): in Node a
 * path is a directory source (src/folder/node.ts `dirSource`, the source the CLI's readers use); a
 * URL, picked File objects or contents are sources too. The Node half is imported only when a path is
 * given, so a browser bundle never pulls in node:fs. A folder of the wrong kind is refused once its
 * config.json is read, before its tokenizer.
 */
import type { LoadedLm } from '../folder/gpt.ts';
import {
  ofKind,
  openFolder,
  toSource,
  type FolderInput,
  type FolderSource,
  type OpenedMarian,
  type OpenedSeq2Seq,
} from '../folder/open.ts';
import { FILES, FolderError, type FolderKind } from '../folder/spec.ts';

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

/**
 * A translation folder with its ensemble (unless `ensemble` is false), as `qkv translate --model DIR` loads it, or a
 * Hugging Face Marian folder. Another kind is refused once its config.json is read.
 */
export async function openTranslation(source: FolderInput, ensemble = true): Promise<OpenedSeq2Seq | OpenedMarian> {
  const wanted = "a translation model folder (format 'qkv-seq2seq', or Hugging Face Marian)";
  const opened = await openFolder(await sourceOf(source), {
    ensemble,
    accept: (kind) => {
      if (kind !== 'seq2seq' && kind !== 'marian') throw wrongKind('translation', kind, label(source), wanted);
    },
  });
  return ofKind(opened, 'seq2seq', 'marian');
}

/** A language-model folder (qkv GPT or Hugging Face GPT-2), as `qkv generate --model DIR` loads it. */
export async function openLanguageModel(source: FolderInput): Promise<LoadedLm & { kind: 'gpt' | 'hf-gpt2' }> {
  const opened = await openFolder(await sourceOf(source), {
    accept: (kind) => {
      if (kind === 'seq2seq' || kind === 'marian')
        throw wrongKind(
          'text-generation',
          kind,
          label(source),
          "a language model folder (format 'qkv-gpt', or Hugging Face GPT-2)",
        );
    },
  });
  return ofKind(opened, 'gpt', 'hf-gpt2');
}
