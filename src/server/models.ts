/**
 * The model folders the explorer serves, described for its /models.json: an id (the URL segment
 * under /models/), the folder's name, its kind and one line about it. Every folder is read through
 * the folder module (src/folder/), so a folder the CLI refuses is refused here with the same words.
 */
import { existsSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { ENCODER_FILES } from '../folder/encoder.ts';
import { FILES, MARIAN_FILES, type FolderKind } from '../folder/index.ts';
import { encoderConfigFromHf } from '../models/hf/bert.ts';
import { folderKindOf, readJsonIn } from '../folder/node.ts';

/** One served folder. `dir` stays on the server; the page sees the rest (models.json). */
export interface ServedFolder {
  /** URL segment: /models/<id>/config.json. Letters, digits, '.', '_', '-'. */
  id: string;
  dir: string;
  /** The folder's name, for the switcher. */
  name: string;
  /**
   * From config.json; null when the folder cannot be read as a model (the page then opens it and shows the folder
   * module's error).
   */
  kind: FolderKind | null;
  /** One line: 'translation en→fr, 4 + 4 layers, dModel 128', 'language model (characters), 4 layers, nEmbd 128'. */
  description: string;
  /**
   * The model files the folder has (of SERVED_FILES): the page asks for no other, so a missing optional file costs no
   * 404.
   */
  files: string[];
}

/** What the page sees of a served folder. */
export type ServedFolderInfo = Omit<ServedFolder, 'dir'>;

/** The files of a folder the server hands out (never pytorch_model.bin, never anything else). */
export const SERVED_FILES: readonly string[] = [
  FILES.config,
  FILES.tokenizer,
  FILES.targetTokenizer,
  FILES.weights,
  FILES.vocab,
  FILES.merges,
  ...Object.values(MARIAN_FILES).filter((f) => f !== FILES.vocab),
  // An encoder's: BERT's slow vocabulary and sentence-transformers' length (not modules.json, whose pooling file
  // sits in a subfolder: pooling is for sentence embeddings, which the explorer does not compute).
  ENCODER_FILES.vocabTxt,
  ENCODER_FILES.sentenceBert,
];

const ID = /^[A-Za-z0-9._-]+$/;

function field(o: unknown, ...path: string[]): unknown {
  let x = o;
  for (const k of path) x = x !== null && typeof x === 'object' ? (x as Record<string, unknown>)[k] : undefined;
  return x;
}

const TOKENIZERS: Record<string, string> = { char: 'characters', bpe: 'BPE', bytelevel: 'byte-level BPE' };

function describe(kind: FolderKind, config: unknown): string {
  const m = (k: string) => field(config, 'model', k);
  if (kind === 'seq2seq') {
    const dir = field(config, 'training', 'direction');
    const lang =
      typeof dir === 'string' && /^[a-z]+-[a-z]+$/.test(dir) ? ` ${dir.toUpperCase().replace('-', '→')}` : '';
    return (
      `translation${lang}, ${String(m('numEncoderLayers'))} + ` +
      `${String(m('numDecoderLayers'))} layers, dModel ${String(m('dModel'))}`
    );
  }
  if (kind === 'gpt')
    return (
      `language model ` +
      `(${TOKENIZERS[String(field(config, 'tokenizer'))] ?? String(field(config, 'tokenizer'))}), ` +
      `${String(m('nLayer'))} layers, nEmbd ${String(m('nEmbd'))}`
    );
  if (kind === 't5')
    return (
      `Hugging Face T5, ${String(field(config, 'num_layers'))} layers, ` + `d_model ${String(field(config, 'd_model'))}`
    );
  if (kind === 'marian' || kind === 'm2m100')
    return (
      `Hugging Face ${kind === 'marian' ? 'Marian' : 'M2M100 / NLLB'} translation, ` +
      `${String(field(config, 'encoder_layers'))} + ` +
      `${String(field(config, 'decoder_layers'))} layers, d_model ${String(field(config, 'd_model'))}`
    );
  if (kind === 'hf-encoder') {
    const { family, model: c } = encoderConfigFromHf(config);
    const head = c.head.kind === 'masked-lm' ? ', masked-LM' : c.head.kind === 'classification' ? ', classifier' : '';
    return `Hugging Face encoder (${family}${head}), ${c.numLayers} layers, hidden ${c.dModel}`;
  }
  return `Hugging Face GPT-2, ${String(field(config, 'n_layer'))} layers, n_embd ${String(field(config, 'n_embd'))}`;
}

/**
 * A folder described through the folder module: its kind from config.json (a FolderError naming the
 * file when it is not a model folder). `lenient`: a folder that fails is listed with kind null and
 * the error as its description, for library callers that leave the message to the page.
 */
export function describeFolder(dir: string, id: string = basename(resolve(dir)), lenient = false): ServedFolder {
  const abs = resolve(dir);
  const name = basename(abs);
  const files = SERVED_FILES.filter((f) => existsSync(join(abs, f)));
  try {
    const kind = folderKindOf(abs);
    return { id, dir: abs, name, kind, description: describe(kind, readJsonIn(abs, FILES.config)), files };
  } catch (e) {
    if (!lenient) throw e;
    return { id, dir: abs, name, kind: null, description: (e as Error).message, files };
  }
}

/** Ids for folders: their names, made URL-safe, with -2, -3 after a repeated one. */
export function folderIds(dirs: readonly string[]): string[] {
  const seen = new Set<string>();
  return dirs.map((d) => {
    const base =
      basename(resolve(d))
        .replace(/[^A-Za-z0-9._-]/g, '_')
        .replace(/^\.+/, '_') || 'model';
    let id = base;
    for (let i = 2; seen.has(id); i++) id = `${base}-${i}`;
    seen.add(id);
    return id;
  });
}

/** Whether `id` may name a served folder in a URL. */
export function isFolderId(id: string): boolean {
  return ID.test(id) && !/^\.+$/.test(id);
}
