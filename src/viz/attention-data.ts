/**
 * A translation with every attention map of the model: encoder self-attention, decoder masked
 * self-attention and decoder-to-encoder cross-attention, per layer and head, as plain arrays
 * ([layer][head][query][key]) ready for the drawing functions. Runs anywhere qkv runs (no Node
 * APIs): `qkv attention` uses it in Node, the explorer in the browser.
 *
 * The sentence is first translated (greedy or beam search); the maps are then read from one
 * teacher-forced pass over the chosen output, so the decoder rows are exactly the positions that
 * produced it: row t is the position fed token t (`<s>` first) that predicted output token t.
 */
import { noGrad } from '../autograd/grad-mode.ts';
import { generateHf, hfRules, type HfSearchOptions } from '../decode/hf-search.ts';
import { beamSearch, greedy } from '../decode/search.ts';
import type { LoadedMarian } from '../folder/marian.ts';
import { seq2seqFromFiles } from '../folder/open.ts';
import { FILES, FolderError, folderKind } from '../folder/spec.ts';
import type { Seq2Seq } from '../models/seq2seq.ts';
import { Tensor } from '../tensor/tensor.ts';
import type { BpeTokenizer } from '../text/bpe.ts';
import { beamSearchReading, generateHfReading, greedyReading } from './decode-async.ts';

/** [layer][head][query][key]. */
export type AttentionStack = number[][][][];

/** The three attention maps of an encoder-decoder (§3.2.3). */
export type AttentionKind = 'encoder' | 'decoder' | 'cross';

/** Each kind's name as pages and the CLI print it. */
export const KIND_NAMES: Record<AttentionKind, string> = {
  encoder: 'encoder self-attention',
  decoder: 'decoder masked self-attention',
  cross: 'decoder → encoder cross-attention',
};

/** A translation and every attention map that produced it (see the file comment). */
export interface TranslationAttention {
  /** The sentence translated, trimmed. */
  source: string;
  /** The output decoded to text (EOS not included). */
  translation: string;
  /** Source tokens (the encoder's positions). */
  srcTokens: string[];
  /** Decoder input tokens: '<s>' then the output tokens but the last (the decoder's positions). */
  tgtTokens: string[];
  /** Output tokens, one per decoder position (the last is '</s>' when the output ended). */
  outTokens: string[];
  /** Source token ids, cut to the model's maxLen. */
  srcIds: number[];
  /** Output token ids, EOS included when the output ended with it. */
  outIds: number[];
  /** Output ended with EOS (false: cut at the length limit). */
  finished: boolean;
  /** The sentence's token count when it was longer than the model reads and cut to maxLen (else absent). */
  truncatedFrom?: number;
  /** Encoder self-attention, [layer][head][srcToken][srcToken]. */
  encoder: AttentionStack;
  /** Decoder masked self-attention, [layer][head][tgtToken][tgtToken]; empty when nothing was output. */
  decoder: AttentionStack;
  /** Cross-attention, [layer][head][tgtToken][srcToken]; empty when nothing was output. */
  cross: AttentionStack;
}

/** Options of {@link translateWithAttention}: the search and its length limit. */
export interface TranslateOptions {
  /** Beam size; 1 (default) = greedy. */
  beam?: number;
  /** Length penalty α of beam search (default 0.6). */
  alpha?: number;
  /** Most output tokens (default: source length + 50, capped by the model). */
  maxLen?: number;
}

/** (1, h, L, S) float32 values → [head][query][key]. */
function headsOfValues(d: Float32Array, [, h, L, S]: readonly number[]): number[][][] {
  return Array.from({ length: h }, (_, a) =>
    Array.from({ length: L }, (_, i) => Array.from(d.subarray((a * L + i) * S, (a * L + i + 1) * S))),
  );
}

/** (1, h, L, S) float32 tensor → [head][query][key]. */
export function headsOf(w: Tensor): number[][][] {
  return headsOfValues(w.dataSync<Float32Array>(), w.shape);
}

/**
 * {@link headsOf} of every tensor, read back asynchronously (every device; a GPU's tensors read only so; a CPU's
 * are read in place, as headsOf reads them).
 */
export async function headsOfAsync(ws: readonly Tensor[]): Promise<AttentionStack> {
  const values = await Promise.all(ws.map((w) => valuesOf(w)));
  return values.map((d, i) => headsOfValues(d, ws[i].shape));
}

/** A float32 tensor's values: in place where its device reads synchronously (a CPU), else read back. */
export function valuesOf(t: Tensor): Promise<Float32Array> {
  return t.device.readSync ? Promise.resolve(t.dataSync<Float32Array>()) : t.data<Float32Array>();
}

/** The query and key labels of a kind of map. */
export function axisTokens(
  t: TranslationAttention,
  kind: AttentionKind,
): {
  /** Query labels, one per row of the map. */
  rows: string[];
  /** Key labels, one per column of the map. */
  cols: string[];
} {
  if (kind === 'encoder') return { rows: t.srcTokens, cols: t.srcTokens };
  if (kind === 'decoder') return { rows: t.tgtTokens, cols: t.tgtTokens };
  return { rows: t.tgtTokens, cols: t.srcTokens };
}

/** The maps of one kind, [layer][head][query][key]. */
export function mapsOf(t: TranslationAttention, kind: AttentionKind): AttentionStack {
  return kind === 'encoder' ? t.encoder : kind === 'decoder' ? t.decoder : t.cross;
}

/**
 * Encoder self-attention weights of every layer for src (1, S), and the memory, computed layer by
 * layer exactly as Seq2Seq.encode does (the weights come from the same attention call's inputs).
 */
export function encoderAttention(
  model: Seq2Seq,
  src: Tensor,
): {
  /** The encoder output (1, S, dModel), what the decoder attends to. */
  memory: Tensor;
  /** Per layer the per-head weights, [layer][head][query][key]. */
  weights: AttentionStack;
} {
  const { memory, weights } = encoderWeights(model, src);
  return { memory, weights: weights.map(headsOf) };
}

/** encoderAttention's pass with its weights as tensors, (1, h, S, S) per layer, not read yet. */
function encoderWeights(model: Seq2Seq, src: Tensor): { memory: Tensor; weights: Tensor[] } {
  return noGrad(() => {
    const pad = model.paddingMask(src);
    const enc = model.transformer.encoder;
    let x = model.embed(src);
    const weights: Tensor[] = [];
    for (const layer of enc.layers) {
      const a = layer.options.normFirst ? layer.norm1.forward(x) : x;
      const r = layer.selfAttn.forward(a, a, a, { keyPaddingMask: pad, needWeights: true, averageAttnWeights: false });
      weights.push(r.weights!);
      x = layer.forward(x, { srcKeyPaddingMask: pad });
    }
    return { memory: enc.norm ? enc.norm.forward(x) : x, weights };
  });
}

/** A sentence's source ids as `qkv translate` reads them: trimmed, encoded, cut to the model's first maxLen tokens. */
export function sourceOf(
  encode: (text: string) => number[],
  maxLen: number,
  sentence: string,
): { text: string; srcIds: number[]; truncatedFrom: number | undefined } {
  const text = sentence.trim();
  if (text === '') throw new Error('translate: the sentence is empty');
  const allIds = encode(text);
  const srcIds = allIds.slice(0, maxLen);
  return { text, srcIds, truncatedFrom: allIds.length > srcIds.length ? allIds.length : undefined };
}

/** The source as the searches take it: (1, S) int32. */
export function sourceTensor(srcIds: readonly number[]): Tensor {
  return new Tensor(Int32Array.from(srcIds), [1, srcIds.length], 'int32');
}

/** The target tokenizer of a translation, checked against the model's vocabularies. */
function targetOf(model: Seq2Seq, tokenizer: BpeTokenizer, targetTokenizer: BpeTokenizer | undefined): BpeTokenizer {
  const target = targetTokenizer ?? tokenizer;
  if ((model.config.tgtVocabSize !== undefined) !== (target !== tokenizer)) {
    throw new Error(
      'translate: ' +
        (target === tokenizer
          ? 'a model with separate vocabularies needs options.targetTokenizer'
          : 'a shared-vocabulary model takes no targetTokenizer'),
    );
  }
  return target;
}

/** The result, from the source, the search's output and its maps (read). */
export function assembled(
  source: { text: string; srcIds: number[]; truncatedFrom: number | undefined },
  translation: string,
  finished: boolean,
  maps: Maps<AttentionStack>,
  names: { source: (id: number) => string; target: (id: number) => string },
): TranslationAttention {
  const { text, srcIds, truncatedFrom } = source;
  const { outIds, inIds, encoder, decoder, cross } = maps;
  return {
    source: text,
    translation,
    srcTokens: srcIds.map(names.source),
    tgtTokens: outIds.length > 0 ? inIds.map(names.target) : [],
    outTokens: outIds.map(names.target),
    srcIds,
    outIds,
    finished,
    ...(truncatedFrom !== undefined && { truncatedFrom }),
    encoder,
    decoder,
    cross,
  };
}

/**
 * Translate one sentence and collect every attention map. `tokenizer` encodes the source;
 * `options.targetTokenizer` names and decodes the target when the vocabularies are separate.
 */
export function translateWithAttention(
  model: Seq2Seq,
  tokenizer: BpeTokenizer,
  sentence: string,
  options: TranslateOptions & { targetTokenizer?: BpeTokenizer } = {},
): TranslationAttention {
  const source = sourceOf((t) => tokenizer.encode(t), model.config.maxLen, sentence);
  const beam = options.beam ?? 1;
  const target = targetOf(model, tokenizer, options.targetTokenizer);
  const ids = { bosId: target.bosId, eosId: target.eosId, maxLen: options.maxLen };
  return noGrad(() => {
    const src = sourceTensor(source.srcIds);
    const res =
      beam > 1
        ? beamSearch(model, src, { ...ids, beamSize: beam, lengthPenalty: options.alpha ?? 0.6 })
        : greedy(model, src, ids);
    const tokens = res.tokens[0];
    const finished = res.finished[0];
    const maps = readMaps(recordMaps(model, src, tokens, finished, target));
    return assembled(source, target.decode(tokens), finished, maps, seq2seqNames(tokenizer, target));
  });
}

/**
 * {@link translateWithAttention} on every device: each decoding step and the maps read back asynchronously (how a
 * model on a GPU is read). On a CPU device the same steps and the same numbers.
 */
export async function translateWithAttentionAsync(
  model: Seq2Seq,
  tokenizer: BpeTokenizer,
  sentence: string,
  options: TranslateOptions & { targetTokenizer?: BpeTokenizer } = {},
): Promise<TranslationAttention> {
  const source = sourceOf((t) => tokenizer.encode(t), model.config.maxLen, sentence);
  const beam = options.beam ?? 1;
  const target = targetOf(model, tokenizer, options.targetTokenizer);
  const ids = { bosId: target.bosId, eosId: target.eosId, maxLen: options.maxLen };
  const src = sourceTensor(source.srcIds);
  const res =
    beam > 1
      ? await beamSearchReading(model, src, source.srcIds, {
          ...ids,
          beamSize: beam,
          lengthPenalty: options.alpha ?? 0.6,
        })
      : await greedyReading(model, src, source.srcIds, ids);
  const tokens = res.tokens[0];
  const finished = res.finished[0];
  const maps = await readMapsAsync(recordMaps(model, src, tokens, finished, target));
  return assembled(source, target.decode(tokens), finished, maps, seq2seqNames(tokenizer, target));
}

/** The axis labels of a qkv translation model's source and target ids. */
function seq2seqNames(
  tokenizer: BpeTokenizer,
  target: BpeTokenizer,
): { source: (id: number) => string; target: (id: number) => string } {
  return {
    source: (id) => tokenizer.idToToken(id) ?? `#${id}`,
    target: (id) => target.idToToken(id) ?? `#${id}`,
  };
}

/** Every attention map of one decoded output, with the decoder's output and input ids. */
export interface Maps<M> {
  outIds: number[];
  inIds: number[];
  encoder: M;
  decoder: M;
  cross: M;
}

/** The maps as tensors, (1, h, L, S) each, not read yet (see recordMaps). */
export type RecordedMaps = Maps<Tensor[]>;

/**
 * Every attention map of one decoded output: the encoder's, then the decoder's and the cross maps with the
 * decoder fed the start id and the output (EOS appended when it finished), teacher-forced in one call.
 */
export function recordMaps(
  model: Seq2Seq,
  src: Tensor,
  tokens: number[],
  finished: boolean,
  start: { bosId: number; eosId: number },
): RecordedMaps {
  const outIds = finished ? [...tokens, start.eosId] : tokens.slice();
  const { memory, weights: encoder } = encoderWeights(model, src);
  const inIds = [start.bosId, ...outIds.slice(0, -1)];
  if (outIds.length === 0) return { outIds, inIds, encoder, decoder: [], cross: [] };
  return noGrad(() => {
    const cache = model.initCache(memory, model.paddingMask(src));
    const r = model.decodeIncremental(new Tensor(Int32Array.from(inIds), [1, inIds.length], 'int32'), cache, {
      needWeights: true,
    });
    return { outIds, inIds, encoder, decoder: r.selfWeights!, cross: r.crossWeights! };
  });
}

/** The maps' values, [layer][head][query][key], read now (a CPU device). */
export function readMaps(m: RecordedMaps): Maps<AttentionStack> {
  return { ...m, encoder: m.encoder.map(headsOf), decoder: m.decoder.map(headsOf), cross: m.cross.map(headsOf) };
}

/** {@link readMaps}, read back asynchronously (every device). */
export async function readMapsAsync(m: RecordedMaps): Promise<Maps<AttentionStack>> {
  const [encoder, decoder, cross] = await Promise.all([m.encoder, m.decoder, m.cross].map(headsOfAsync));
  return { ...m, encoder, decoder, cross };
}

/** What Marian decodes with: Hugging Face's generate() rules, the beam and α the page asks for or the folder's. */
function hfOptions(
  opened: Pick<LoadedMarian, 'ids' | 'generation'>,
  options: Pick<TranslateOptions, 'beam' | 'alpha'>,
): HfSearchOptions {
  const { ids, generation } = opened;
  return {
    ...hfRules(ids, generation),
    numBeams: options.beam ?? generation.numBeams,
    lengthPenalty: options.alpha ?? generation.lengthPenalty,
  };
}

/**
 * translateWithAttention for a Hugging Face Marian folder: the sentence encoded by its MarianTokenizer
 * (EOS appended), translated by HF's generate() rules (decode/hf-search.ts; `beam` and `alpha` default
 * to the folder's num_beams and length_penalty), and every map collected with the decoder fed from the
 * decoder start id (Marian's padding id, `<pad>` on the axis).
 */
export function marianWithAttention(
  opened: Pick<LoadedMarian, 'model' | 'tokenizer' | 'ids' | 'generation'>,
  sentence: string,
  options: Pick<TranslateOptions, 'beam' | 'alpha'> = {},
): TranslationAttention {
  const { model, tokenizer, ids } = opened;
  const source = sourceOf((t) => tokenizer.encode(t), model.config.maxLen, sentence);
  return noGrad(() => {
    const src = sourceTensor(source.srcIds);
    const res = generateHf(model, src, hfOptions(opened, options));
    const tokens = res.tokens[0];
    const finished = res.finished[0];
    const start = { bosId: ids.decoderStartId, eosId: ids.eosId };
    const maps = readMaps(recordMaps(model, src, tokens, finished, start));
    const name = (id: number) => tokenizer.idToToken(id) ?? `#${id}`;
    return assembled(source, tokenizer.decode(tokens), finished, maps, { source: name, target: name });
  });
}

/** {@link marianWithAttention} on every device: the steps and maps read back asynchronously, as the qkv twin. */
export async function marianWithAttentionAsync(
  opened: Pick<LoadedMarian, 'model' | 'tokenizer' | 'ids' | 'generation'>,
  sentence: string,
  options: Pick<TranslateOptions, 'beam' | 'alpha'> = {},
): Promise<TranslationAttention> {
  const { model, tokenizer, ids } = opened;
  const source = sourceOf((t) => tokenizer.encode(t), model.config.maxLen, sentence);
  const src = sourceTensor(source.srcIds);
  const res = await generateHfReading(model, src, source.srcIds, hfOptions(opened, options));
  const tokens = res.tokens[0];
  const finished = res.finished[0];
  const start = { bosId: ids.decoderStartId, eosId: ids.eosId };
  const maps = await readMapsAsync(recordMaps(model, src, tokens, finished, start));
  const name = (id: number) => tokenizer.idToToken(id) ?? `#${id}`;
  return assembled(source, tokenizer.decode(tokens), finished, maps, { source: name, target: name });
}

/**
 * What a model folder's config.json says it holds: a translation model (qkv train) or a language model (qkv train-lm,
 * or Hugging Face GPT-2).
 */
export type ModelKind = 'seq2seq' | 'gpt';

export { MODEL_FORMATS } from '../folder/spec.ts';

/**
 * The kind of model a config.json describes (folder/spec.ts folderKind, a GPT-2 folder being a 'gpt'); a clear error
 * naming `file` when it is neither.
 */
export function modelKind(configJson: unknown, file: string = FILES.config): ModelKind {
  const kind = folderKind(configJson, file);
  if (kind === 'marian' || kind === 'm2m100' || kind === 't5')
    throw new FolderError(
      file,
      `${file}: a Hugging Face ${kind === 'marian' ? 'Marian' : kind === 't5' ? 'T5' : 'M2M100 / NLLB'} model; ` +
        'the explorer does not show it in this view yet',
    );
  if (kind === 'hf-encoder')
    throw new FolderError(file, `${file}: a Hugging Face encoder; the explorer does not show encoder folders yet`);
  return kind === 'hf-gpt2' ? 'gpt' : kind;
}

/**
 * The model and tokenizer(s) of a model folder's files, from their contents (fetch, or disk):
 * config.json, tokenizer.json, model.safetensors, and for a model with separate vocabularies
 * target_tokenizer.json (`targetTokenizerJson`; `targetTokenizer` is `tokenizer` otherwise).
 */
export function loadModelFromFiles(
  configJson: unknown,
  tokenizerJson: unknown,
  weights: Uint8Array,
  targetTokenizerJson?: unknown,
): {
  /** The translation model, weights loaded. */
  model: Seq2Seq;
  /** The source tokenizer (the shared one when the vocabulary is shared). */
  tokenizer: BpeTokenizer;
  /** The target tokenizer: its own with separate vocabularies, else `tokenizer` itself. */
  targetTokenizer: BpeTokenizer;
} {
  const { model, tokenizer, targetTokenizer } = seq2seqFromFiles({
    config: configJson,
    tokenizer: tokenizerJson,
    weights,
    targetTokenizer: targetTokenizerJson,
  });
  return { model, tokenizer, targetTokenizer };
}
