/**
 * A Hugging Face `tokenizer.json` whose model is Unigram (what `convert_slow_tokenizer` writes for a
 * SentencePiece model, and what transformers.js reads), turned into the {@link SpmModel} that
 * sentencepiece.ts segments: `model.vocab` ([piece, score] pairs, in id order) gives the pieces,
 * `model.unk_id` the unknown piece, special added tokens become CONTROL pieces, non-special added
 * tokens found in the vocabulary USER_DEFINED ones (kept whole, as SentencePiece keeps
 * `user_defined_symbols`), and with `byte_fallback` the `<0xNN>` pieces BYTE ones.
 *
 * The pipeline maps onto SentencePiece's normalizer spec:
 *  - normalizer `Precompiled` → its `precompiled_charsmap` (base64), applied as sentencepiece
 *    applies it (HF's `tokenizers` looks rules up per grapheme cluster first; the two agree on text
 *    whose rules do not span a cluster boundary, which is ordinary text);
 *  - normalizer `Replace` of `" {2,}"` (in a Sequence, with `Strip`), or a `WhitespaceSplit`
 *    pre-tokenizer → runs of spaces squeezed and ends trimmed (`remove_extra_whitespaces`);
 *  - pre-tokenizer `Metaspace` → spaces written as `▁`, with a dummy `▁` prefix unless
 *    `add_prefix_space` is false or `prepend_scheme` is "never".
 * Anything else is refused by name.
 */
import {
  defaultNormalizerSpec,
  defaultTrainerSpec,
  PieceType,
  type SpmModel,
  type SpmPiece,
} from './sentencepiece-model.ts';

type Json = Record<string, unknown>;

const isObject = (x: unknown): x is Json => x !== null && typeof x === 'object' && !Array.isArray(x);

/** The SentencePiece model a Unigram tokenizer.json describes; `name` (the file) starts errors. */
export function spmModelFromTokenizerJson(json: unknown, name = 'a Unigram tokenizer JSON'): SpmModel {
  const fail = (msg: string): never => {
    throw new Error(`${name}: ${msg}`);
  };
  let j = json;
  if (typeof json === 'string') {
    try {
      j = JSON.parse(json);
    } catch (e) {
      fail(`not valid JSON (${(e as Error).message})`);
    }
  }
  if (!isObject(j)) return fail('expected a tokenizer.json object');
  const model = j.model;
  if (!isObject(model) || model.type !== 'Unigram')
    fail(`model.type must be "Unigram", got ${JSON.stringify(isObject(model) ? model.type : model)}`);
  const m = model as Json;
  if (!Array.isArray(m.vocab) || m.vocab.length === 0) fail('model.vocab must be a non-empty array of [piece, score]');
  const byteFallback = m.byte_fallback === true;
  const pieces: SpmPiece[] = (m.vocab as unknown[]).map((entry, id) => {
    if (!Array.isArray(entry) || typeof entry[0] !== 'string' || typeof entry[1] !== 'number')
      fail(`model.vocab[${id}] must be [piece, score], got ${JSON.stringify(entry)}`);
    const [piece, score] = entry as [string, number];
    const type = byteFallback && /^<0x[0-9A-F]{2}>$/.test(piece) ? PieceType.BYTE : PieceType.NORMAL;
    return { piece, score, type };
  });
  const unkId = m.unk_id;
  if (!Number.isInteger(unkId) || (unkId as number) < 0 || (unkId as number) >= pieces.length)
    fail(`model.unk_id must be an id of model.vocab (0..${pieces.length - 1}), got ${JSON.stringify(unkId)}`);
  pieces[unkId as number]!.type = PieceType.UNKNOWN;
  const ids = new Map(pieces.map((p, i) => [p.piece, i]));
  for (const added of Array.isArray(j.added_tokens) ? j.added_tokens : []) {
    if (!isObject(added) || typeof added.content !== 'string')
      fail(`added token ${JSON.stringify(added)} has no content`);
    const id = ids.get((added as Json).content as string);
    if (id === undefined || id === unkId) continue;
    pieces[id]!.type = (added as Json).special === true ? PieceType.CONTROL : PieceType.USER_DEFINED;
  }
  const normalizerSpec = defaultNormalizerSpec();
  normalizerSpec.name = 'unigram-json'; // a label only (the spec comes from the JSON, not a named sentencepiece rule)
  normalizerSpec.removeExtraWhitespaces = false;
  readNormalizer(j.normalizer, normalizerSpec, fail);
  readPreTokenizer(j.pre_tokenizer, normalizerSpec, fail);
  return {
    pieces,
    trainerSpec: { ...defaultTrainerSpec(), byteFallback, unkId: unkId as number },
    normalizerSpec,
    denormalizerSpec: null,
  };
}

function readNormalizer(n: unknown, spec: SpmModel['normalizerSpec'], fail: (msg: string) => never): void {
  if (n === null || n === undefined) return;
  if (!isObject(n)) return fail(`normalizer must be an object or null, got ${JSON.stringify(n)}`);
  if (n.type === 'Sequence' && Array.isArray(n.normalizers)) {
    for (const part of n.normalizers) readNormalizer(part, spec, fail);
  } else if (n.type === 'Precompiled') {
    if (typeof n.precompiled_charsmap !== 'string') fail('normalizer Precompiled needs precompiled_charsmap (base64)');
    spec.precompiledCharsmap = Uint8Array.from(atob(n.precompiled_charsmap as string), (c) => c.charCodeAt(0));
  } else if (n.type === 'Replace' && isObject(n.pattern) && n.pattern.Regex === ' {2,}') {
    spec.removeExtraWhitespaces = true;
  } else if (n.type === 'Strip') {
    // Goes with the Replace above: sentencepiece trims the ends when it squeezes spaces.
  } else {
    fail(
      `normalizer ${JSON.stringify(n.type)} is not supported ` +
        '(supported: Precompiled, Replace " {2,}", Strip, a Sequence of them, or null)',
    );
  }
}

function readPreTokenizer(p: unknown, spec: SpmModel['normalizerSpec'], fail: (msg: string) => never): void {
  if (!isObject(p)) return fail(`pre_tokenizer must be Metaspace, got ${JSON.stringify(p)}`);
  if (p.type === 'Sequence' && Array.isArray(p.pretokenizers)) {
    for (const part of p.pretokenizers) readPreTokenizer(part, spec, fail);
  } else if (p.type === 'WhitespaceSplit') {
    spec.removeExtraWhitespaces = true;
  } else if (p.type === 'Metaspace') {
    if ((p.replacement ?? '\u2581') !== '\u2581')
      fail(`pre_tokenizer Metaspace: replacement must be "▁", got ${JSON.stringify(p.replacement)}`);
    spec.addDummyPrefix = p.add_prefix_space !== false && p.prepend_scheme !== 'never';
  } else {
    fail(`pre_tokenizer ${JSON.stringify(p.type)} is not supported (supported: Metaspace, WhitespaceSplit)`);
  }
}
