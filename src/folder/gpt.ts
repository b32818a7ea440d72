/**
 * Language-model folders from their files' contents: a qkv GPT (config.json format 'qkv-gpt', from
 * `qkv train-lm`) and a Hugging Face GPT-2 checkpoint (config.json model_type 'gpt2'; its tokenizer
 * from tokenizer.json, or from the slow tokenizer's vocab.json + merges.txt). Browser-safe.
 *
 * Text and ids: qkv's language models are trained on lines, each ended by the separator, so a
 * prompt's lines are joined by it. A byte-level model (GPT-2) reads raw text: '\n' is an ordinary
 * token, and <|endoftext|> (the separator here) only opens the document.
 */
import { GPT } from '../models/gpt.ts';
import { checkGptConfig } from '../models/config-check.ts';
import { BpeTokenizer } from '../text/bpe.ts';
import { ByteLevelBpeTokenizer, byteLevelBpeJson } from '../text/bytelevel.ts';
import { CharTokenizer } from '../text/chars.ts';
import { tokenizerFromJSON } from '../text/load.ts';
import { bosEosPostProcessor } from '../text/post-processor.ts';
import { ChatTemplate } from '../text/chat-template.ts';
import { hfLmGeneration, type HfLmGeneration } from '../models/hf/lm-generation.ts';
import { decodeLines, encodeLines, type LmTokenizer } from '../text/lines.ts';
import { notFound } from './seq2seq.ts';
import { bareNames, checkFormat, FILES, FolderError, type FileNamer, type LmConfigFile } from './spec.ts';

/**
 * A language model's tokenizer: characters (config.json `"tokenizer": "char"`), qkv's BPE (`"bpe"`), or
 * GPT-2's byte-level BPE (a Hugging Face GPT-2 folder).
 */
export type GptTokenizer = CharTokenizer | BpeTokenizer | ByteLevelBpeTokenizer;

/** A language-model folder as loaded: the model, its tokenizer and the id that separates lines. */
export interface LoadedGpt {
  /**
   * The decoder-only Transformer config.json's `model` describes: weights loaded and
   * in eval mode from the folder loaders, random weights in training mode from {@link gptShape}.
   */
  model: GPT;
  /**
   * The tokenizer the model was trained with; its vocabulary is the model's (GPT-2's may be shorter than a padded
   * table, never longer).
   */
  tokenizer: GptTokenizer;
  /** The id that ends a line: '\n' for characters, EOS for BPE (as `qkv train-lm` trains). */
  separatorId: number;
  /**
   * The folder's config.json as qkv reads it (an HF GPT-2 one described in qkv's terms); every folder loader sets it.
   */
  config?: LmConfigFile;
  /**
   * A Hugging Face folder's generation defaults (generation_config.json, else config.json's generation keys), which
   * the text-generation pipeline and `qkv generate` apply as generate() does; undefined for qkv's own folders,
   * which keep qkv's documented defaults.
   */
  generation?: HfLmGeneration;
}

/** A language-model folder as the folder loaders give it: the one loaded type, with its config. */
export type LoadedLm = Required<Omit<LoadedGpt, 'generation'>> & Pick<LoadedGpt, 'generation'>;

/** The id that ends a line (one document) in training: '\n' for a char tokenizer, EOS for BPE. */
export function lineSeparatorId(tokenizer: LmTokenizer | ByteLevelBpeTokenizer): number {
  if (tokenizer instanceof CharTokenizer) {
    const id = tokenizer.tokenToId('\n');
    if (id === undefined)
      throw new Error('the character tokenizer has no "\\n" (the line separator a language model is trained with)');
    return id;
  }
  return (tokenizer as BpeTokenizer | ByteLevelBpeTokenizer).eosId;
}

/** A prompt's ids, without the leading separator: lines joined by the separator, or (byte-level) the raw text. */
export function promptIds(tokenizer: GptTokenizer, prompt: string, separatorId: number): number[] {
  if (tokenizer instanceof ByteLevelBpeTokenizer) return tokenizer.encode(prompt);
  const body = encodeLines(tokenizer, prompt.split('\n'), separatorId);
  return [...body.subarray(0, body.length - 1)];
}

/**
 * The ids a model is fed for a prompt, as `qkv generate` feeds them: for qkv's own folders the prompt's ids after
 * one separator (a line start, as in training) when the context has room for it; for a Hugging Face folder the
 * ids its tokenizer gives, special tokens included (tokenizer.json's post-processor, or tokenizer_config.json's
 * `add_bos_token`), as transformers' `tokenizer(prompt)` does.
 */
export function promptContext(lm: LoadedGpt, prompt: string): number[] {
  // A Hugging Face folder: the ids its tokenizer gives with its special tokens (none for GPT-2), as transformers.
  if (lm.generation && lm.tokenizer instanceof ByteLevelBpeTokenizer) return lm.tokenizer.encodeText(prompt).ids;
  const ids = promptIds(lm.tokenizer, prompt, lm.separatorId);
  return ids.length < lm.model.config.blockSize ? [lm.separatorId, ...ids] : ids;
}

/** The text of ids (no leading separator): separators become line ends, or (byte-level) the bytes' text. */
export function idsText(tokenizer: GptTokenizer, ids: readonly number[], separatorId: number): string {
  if (tokenizer instanceof ByteLevelBpeTokenizer) return tokenizer.decode(ids, { skipSpecialTokens: true });
  return decodeLines(tokenizer, ids, separatorId);
}

/** A qkv GPT folder's files: parsed JSON, weights as bytes; undefined where the folder lacks the file. */
export interface GptFiles {
  /**
   * config.json, parsed (format 'qkv-gpt' with `model` and `tokenizer`: 'char' or 'bpe'); undefined: `model config not
   * found`.
   */
  config: unknown;
  /**
   * tokenizer.json, parsed: a `qkv-chars` tokenizer or qkv's BPE, as config.json's `tokenizer` says; undefined:
   * `tokenizer not found`.
   */
  tokenizer: unknown;
  /** model.safetensors as bytes (read after the config and tokenizer are checked). */
  weights?: Uint8Array;
}

/** The model (random weights) and tokenizer of a qkv GPT folder (format 'qkv-gpt'). */
export function gptShape(files: Omit<GptFiles, 'weights'>, name: FileNamer = bareNames): LoadedLm {
  const cname = name(FILES.config);
  if (files.config === undefined) throw notFound(FILES.config, name);
  checkFormat(files.config, 'qkv-gpt', cname);
  const cfg = files.config as LmConfigFile;
  if (cfg.tokenizer !== 'char' && cfg.tokenizer !== 'bpe')
    throw new FolderError(
      FILES.config,
      `${cname}: expected "tokenizer": "char" or "bpe", got '${String(cfg.tokenizer)}'`,
    );
  if (files.tokenizer === undefined) throw notFound(FILES.tokenizer, name);
  let tokenizer: GptTokenizer;
  try {
    tokenizer =
      cfg.tokenizer === 'char' ? CharTokenizer.fromJSON(files.tokenizer) : BpeTokenizer.fromJSON(files.tokenizer);
  } catch (e) {
    throw new FolderError(FILES.tokenizer, `${name(FILES.tokenizer)}: ${(e as Error).message}`);
  }
  let model: GPT;
  try {
    model = new GPT(checkGptConfig(cfg.model), { init: false }); // its weights are loaded next
  } catch (e) {
    throw new FolderError(FILES.config, `${cname}: ${(e as Error).message}`);
  }
  if (tokenizer.vocabSize !== model.config.vocabSize) {
    throw new FolderError(
      FILES.tokenizer,
      `${name(FILES.tokenizer)}: ${tokenizer.vocabSize} tokens, but ` +
        `${cname}'s model.vocabSize is ${model.config.vocabSize}`,
    );
  }
  return { model, tokenizer, separatorId: lineSeparatorId(tokenizer), config: cfg };
}

/** A Hugging Face GPT-2 folder's tokenizer files: tokenizer.json, or vocab.json (parsed) + merges.txt (text). */
export interface HfTokenizerFiles {
  /** tokenizer.json, parsed; when present, vocab.json and merges.txt are not read. */
  tokenizer?: unknown;
  /** vocab.json, parsed: an object of token → id (used only without tokenizer.json, with `merges`). */
  vocab?: unknown;
  /** merges.txt as text: an optional `#version` line, then one `a b` merge per line (used only with `vocab`). */
  merges?: string;
  /**
   * tokenizer_config.json, parsed: without tokenizer.json, its `add_bos_token`/`add_eos_token` say which special
   * tokens go around a prompt (with tokenizer.json, its post-processor does), as transformers 5 reads them.
   */
  tokenizerConfig?: unknown;
  /** chat_template.jinja's text: the chat template, over tokenizer_config.json's `chat_template` (transformers 5). */
  chatTemplate?: string;
}

/**
 * The tokenizer.json the slow GPT-2 tokenizer's vocab.json and merges.txt stand for: byte-level
 * BPE without a prefix space, <|endoftext|> its one special token (as `GPT2Tokenizer` reads them).
 */
export function gpt2TokenizerJson(vocab: unknown, merges: string, name: FileNamer = bareNames): unknown {
  if (vocab === null || typeof vocab !== 'object' || Array.isArray(vocab))
    throw new FolderError(
      FILES.vocab,
      `${name(FILES.vocab)}: expected an object of token: id, got ` +
        `${Array.isArray(vocab) ? 'an array' : vocab === null ? 'null' : typeof vocab}`,
    );
  const pairs: [string, string][] = [];
  merges.split(/\r?\n/).forEach((line, i) => {
    if (line === '' || (i === 0 && line.startsWith('#version'))) return;
    const parts = line.split(' ');
    if (parts.length !== 2 || parts[0] === '' || parts[1] === '')
      throw new FolderError(
        FILES.merges,
        `${name(FILES.merges)}: line ${i + 1}: expected two tokens separated by one space, got ${JSON.stringify(line)}`,
      );
    pairs.push([parts[0], parts[1]]);
  });
  const eot = (vocab as Record<string, unknown>)['<|endoftext|>'];
  return byteLevelBpeJson({
    addPrefixSpace: false,
    useRegex: true,
    added: Number.isInteger(eot) ? [{ id: eot as number, content: '<|endoftext|>', special: true }] : [],
    addedNormalized: true,
    vocab,
    merges: pairs,
  });
}

/** A Hugging Face folder's tokenizer (byte-level BPE, or another kind qkv reads), errors naming the file. */
export function hfTokenizer(files: HfTokenizerFiles, name: FileNamer = bareNames): GptTokenizer {
  let json = files.tokenizer;
  let file: string = FILES.tokenizer;
  if (json === undefined) {
    if (files.vocab === undefined || files.merges === undefined) {
      throw new FolderError(
        FILES.tokenizer,
        `tokenizer not found: ${name(FILES.tokenizer)} (a Hugging Face GPT-2 ` +
          `folder holds tokenizer.json, or vocab.json and merges.txt)`,
      );
    }
    json = gpt2TokenizerJson(files.vocab, files.merges, name);
    file = FILES.vocab;
  }
  let tokenizer: GptTokenizer;
  try {
    tokenizer = tokenizerFromJSON(json);
  } catch (e) {
    const m = (e as Error).message.replace(/^tokenizer\.json: /, '');
    throw new FolderError(file, `${name(file)}: ${m}`);
  }
  if (!(tokenizer instanceof ByteLevelBpeTokenizer)) return tokenizer;
  let template: ChatTemplate | null;
  try {
    template = ChatTemplate.fromFolder(files.tokenizerConfig, files.chatTemplate);
  } catch (e) {
    const m = (e as Error).message;
    const at = m.startsWith(FILES.chatTemplate) ? FILES.chatTemplate : FILES.tokenizerConfig;
    throw new FolderError(at, `${name(at)}${m.slice(m.startsWith(at) ? at.length : 0)}`);
  }
  return withTokenizerConfig(tokenizer, files.tokenizerConfig, file === FILES.tokenizer, name).withChatTemplate(
    template,
  );
}

/** A special token of tokenizer_config.json: a string, or an AddedToken object's content; undefined where unset. */
function specialToken(cfg: Record<string, unknown>, key: string, name: FileNamer): string | undefined {
  const v = cfg[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'string') return v;
  const content = (v as { content?: unknown }).content;
  if (typeof content === 'string') return content;
  throw new FolderError(
    FILES.tokenizerConfig,
    `${name(FILES.tokenizerConfig)}: ${key} must be a token string or { content }, got ${JSON.stringify(v)}`,
  );
}

/**
 * transformers 5's rule: with tokenizer.json, its post-processor decides the special tokens around a text, and
 * tokenizer_config.json's `add_bos_token`/`add_eos_token` are dropped (PreTrainedTokenizerBase._from_pretrained); with
 * the slow files only (vocab.json + merges.txt), the post-processor is built from those flags (false where unset,
 * GPT2Tokenizer's default) and the config's `bos_token`/`eos_token` (`<|endoftext|>` where unset): `[bos] $A [eos]`
 * (TokenizersBackend.update_post_processor).
 */
function withTokenizerConfig(
  tokenizer: ByteLevelBpeTokenizer,
  tokenizerConfig: unknown,
  fromTokenizerJson: boolean,
  name: FileNamer,
): ByteLevelBpeTokenizer {
  if (fromTokenizerJson) return tokenizer;
  const cfg = (tokenizerConfig ?? {}) as Record<string, unknown>;
  if (typeof cfg !== 'object' || Array.isArray(cfg) || cfg === null)
    throw new FolderError(FILES.tokenizerConfig, `${name(FILES.tokenizerConfig)}: expected a JSON object`);
  const flag = (key: string): boolean => {
    const v = cfg[key] ?? false;
    if (typeof v !== 'boolean')
      throw new FolderError(
        FILES.tokenizerConfig,
        `${name(FILES.tokenizerConfig)}: ${key} must be true or false, got ${JSON.stringify(v)}`,
      );
    return v;
  };
  const idOf = (add: boolean, key: 'bos_token' | 'eos_token'): number | null => {
    if (!add) return null;
    const token = specialToken(cfg, key, name) ?? '<|endoftext|>';
    const id = tokenizer.tokenToId(token);
    if (id === undefined)
      throw new FolderError(
        FILES.tokenizerConfig,
        `${name(FILES.tokenizerConfig)}: ${key} ${JSON.stringify(token)} is not in the tokenizer's vocabulary`,
      );
    return id;
  };
  return tokenizer.withPostProcessor(
    bosEosPostProcessor(idOf(flag('add_bos_token'), 'bos_token'), idOf(flag('add_eos_token'), 'eos_token')),
  );
}

/** An HF tokenizer against the model's vocab_size: GPT-2's table may be padded past it (to a multiple of 64). */
export function checkHfVocab(tokenizer: GptTokenizer, vocabSize: number, name: FileNamer = bareNames): void {
  if (tokenizer.vocabSize > vocabSize) {
    throw new FolderError(
      FILES.tokenizer,
      `${name(FILES.tokenizer)}: ${tokenizer.vocabSize} tokens, more than ` +
        `${name(FILES.config)}'s vocab_size ${vocabSize}`,
    );
  }
}

/** An HF model and its tokenizer, checked against each other. */
export function checkedHf(
  model: GPT,
  tokenizer: GptTokenizer,
  name: FileNamer = bareNames,
  from?: string,
  generation?: HfLmGeneration,
): LoadedLm {
  checkHfVocab(tokenizer, model.config.vocabSize, name);
  return {
    generation,
    model,
    tokenizer,
    separatorId: lineSeparatorId(tokenizer),
    config: {
      format: 'qkv-gpt',
      version: 1,
      model: model.config,
      tokenizer: 'bytelevel',
      training: { from: from === undefined ? 'Hugging Face folder' : `Hugging Face folder ${from}` },
    },
  };
}

/**
 * A Hugging Face LM folder's generation defaults: generation_config.json (undefined where the folder has none),
 * else config.json's generation keys; an error names the file and key.
 */
export function hfLmDefaults(config: unknown, generationConfig: unknown, name: FileNamer = bareNames): HfLmGeneration {
  try {
    return hfLmGeneration(config, generationConfig, name(FILES.config));
  } catch (e) {
    const m = (e as Error).message;
    const file = m.startsWith('generation_config.json') ? FILES.generationConfig : FILES.config;
    throw new FolderError(file, m.replace(/^generation_config\.json/, name(FILES.generationConfig)));
  }
}

/** The message of an error from reading HF weights, naming the file at fault. */
export function hfWeightsError(e: unknown, name: FileNamer = bareNames): FolderError {
  const m = (e as Error).message;
  const hit = /^(config\.json|model\.safetensors)(: ?)?/.exec(m);
  if (hit) return new FolderError(hit[1], `${name(hit[1])}${m.slice(hit[1].length)}`);
  return new FolderError(FILES.weights, `${name(FILES.weights)}: ${m}`);
}
