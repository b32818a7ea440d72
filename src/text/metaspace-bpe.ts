/**
 * The model stage of a SentencePiece BPE tokenizer as Hugging Face's `tokenizers` runs it from `tokenizer.json`
 * (what transformers writes for NLLB, mBART, M2M100-style tokenizers): text/hf-tokenizer.ts takes it for a `BPE`
 * model whose pre-tokenizer is `Metaspace` (a `ByteLevel` one is text/bytelevel.ts's), after cutting the added
 * tokens out. Each stage is read from the file by its `type`, anything else refused by name:
 *
 *  1. normalizer: `Precompiled` (SentencePiece's compiled rules, applied as sentencepiece-normalizer.ts applies
 *     them), `Replace` of a regex or a string, in a `Sequence`, or null;
 *  2. pre-tokenizer `Metaspace`: spaces written as `▁`, a `▁` prepended where the segment does not start with one
 *     (`prepend_scheme` "always"; "never": none), and with `split` the text cut before every `▁`;
 *  3. model `BPE`: each word's characters (an unknown one → `unk_token`, runs fused with `fuse_unk`) merged pair by
 *     pair, the pair of lowest merge rank first (the leftmost among equals), as tokenizers' `Word::merge_all`;
 *  4. decoder `Metaspace`: `▁` → space, the first token's leading space dropped (unless "never").
 */
import { SpmNormalizer } from './sentencepiece-normalizer.ts';

type Json = Record<string, unknown>;
const isObject = (x: unknown): x is Json => x !== null && typeof x === 'object' && !Array.isArray(x);

const METASPACE = '\u2581';
const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { ignoreBOM: true });

/** A normalizer step: a function of the text. */
type Normalize = (text: string) => string;

/** tokenizer.json's BPE model over Metaspace words (added tokens are the caller's: text/hf-tokenizer.ts). */
export class MetaspaceBpe {
  /** Piece → id: the model's vocabulary. */
  readonly vocab: Map<string, number>;
  /** Id → piece. */
  readonly pieces: string[];
  /** The unknown piece's id (model.unk_token). */
  readonly unkId: number;
  private readonly ranks: Map<string, number>;
  private readonly fuseUnk: boolean;
  private readonly normalize: Normalize;
  private readonly prependScheme: 'always' | 'never';
  private readonly split: boolean;
  private readonly cache = new Map<string, number[]>();

  /** Read from tokenizer.json (text or parsed); `name` (the file) starts errors. */
  constructor(json: unknown, name = 'the tokenizer JSON') {
    const fail = (msg: string): never => {
      throw new Error(`${name}: ${msg}`);
    };
    const j = typeof json === 'string' ? (JSON.parse(json) as unknown) : json;
    if (!isObject(j)) fail('expected a JSON object');
    const t = j as Json;
    const m = t.model;
    if (!isObject(m) || m.type !== 'BPE') fail(`model.type must be "BPE", got ${JSON.stringify((m as Json)?.type)}`);
    const model = m as Json;
    if (!isObject(model.vocab)) fail('model.vocab must be an object (piece → id)');
    if (model.byte_fallback === true) fail('model.byte_fallback true is not supported');
    if (model.continuing_subword_prefix || model.end_of_word_suffix)
      fail('model.continuing_subword_prefix / end_of_word_suffix are not supported');
    if (model.dropout !== null && model.dropout !== undefined && model.dropout !== 0)
      fail(`model.dropout must be null, got ${JSON.stringify(model.dropout)}`);
    this.vocab = new Map(Object.entries(model.vocab as Record<string, number>));
    const merges = Array.isArray(model.merges) ? model.merges : fail('model.merges must be a list');
    this.ranks = new Map();
    (merges as unknown[]).forEach((pair, rank) => {
      const [a, b] = Array.isArray(pair) ? pair : typeof pair === 'string' ? pair.split(' ') : [];
      if (typeof a !== 'string' || typeof b !== 'string') fail(`model.merges[${rank}] is not a pair of pieces`);
      this.ranks.set(`${a} ${b}`, rank);
    });
    this.fuseUnk = model.fuse_unk === true;
    const unk = model.unk_token;
    if (typeof unk !== 'string' || !this.vocab.has(unk))
      fail(`model.unk_token ${JSON.stringify(unk)} is not in the vocabulary`);
    this.unkId = this.vocab.get(unk as string)!;
    this.pieces = [];
    for (const [p, id] of this.vocab) this.pieces[id] = p;
    this.normalize = readNormalizer(t.normalizer, fail, name);
    const pre = t.pre_tokenizer;
    if (!isObject(pre) || pre.type !== 'Metaspace' || (pre.replacement ?? METASPACE) !== METASPACE)
      fail(`pre_tokenizer must be Metaspace with replacement "${METASPACE}", got ${JSON.stringify(pre)}`);
    const p = pre as Json;
    const scheme: unknown = p.prepend_scheme ?? (p.add_prefix_space === false ? 'never' : 'always');
    if (scheme !== 'always' && scheme !== 'never')
      throw new Error(`${name}: pre_tokenizer.prepend_scheme ${JSON.stringify(scheme)} is not supported`);
    this.prependScheme = scheme;
    this.split = p.split !== false;
  }

  /** The ids of a segment of text (no added tokens in it: the caller cut them out). */
  encode(text: string): number[] {
    let s = this.normalize(text).replaceAll(' ', METASPACE);
    if (s === '') return [];
    if (this.prependScheme === 'always' && !s.startsWith(METASPACE)) s = METASPACE + s;
    return (this.split ? splitBeforeMetaspace(s) : [s]).flatMap((word) => this.word(word));
  }

  /** The text of model ids: `▁` → space, the first token's leading space dropped (decoder Metaspace). */
  decode(ids: readonly number[]): string {
    return ids
      .map((id, i) => {
        const s = (this.pieces[id] ?? '').replaceAll(METASPACE, ' ');
        return i === 0 && this.prependScheme !== 'never' && s.startsWith(' ') ? s.slice(1) : s;
      })
      .join('');
  }

  /** One word's ids: characters (unknown ones → unk, fused), then merges by rank (tokenizers' `merge_all`). */
  private word(w: string): number[] {
    const hit = this.cache.get(w);
    if (hit) return hit;
    let syms: string[] = [];
    let unkRun = false;
    for (const ch of w) {
      if (this.vocab.has(ch)) {
        syms.push(ch);
        unkRun = false;
      } else if (!(this.fuseUnk && unkRun)) {
        syms.push('\0unk');
        unkRun = true;
      }
    }
    for (;;) {
      let best = -1;
      let bestRank = Infinity;
      for (let i = 0; i + 1 < syms.length; i++) {
        const r = this.ranks.get(`${syms[i]} ${syms[i + 1]}`);
        if (r !== undefined && r < bestRank) {
          bestRank = r;
          best = i;
        }
      }
      if (best < 0) break;
      // Every occurrence of the best pair, left to right, as one merge step does.
      const pair = [syms[best], syms[best + 1]];
      const next: string[] = [];
      for (let i = 0; i < syms.length; i++) {
        if (i + 1 < syms.length && syms[i] === pair[0] && syms[i + 1] === pair[1]) {
          next.push(pair[0] + pair[1]);
          i++;
        } else next.push(syms[i]);
      }
      syms = next;
    }
    const ids = syms.map((s) => (s === '\0unk' ? this.unkId : (this.vocab.get(s) ?? this.unkId)));
    this.cache.set(w, ids);
    return ids;
  }
}

/** "▁a▁b" → ["▁a", "▁b"] (tokenizers' split on the replacement, MergedWithNext). */
function splitBeforeMetaspace(s: string): string[] {
  const out: string[] = [];
  let cur = '';
  for (const ch of s) {
    if (ch === METASPACE && cur !== '') {
      out.push(cur);
      cur = '';
    }
    cur += ch;
  }
  if (cur) out.push(cur);
  return out;
}

/** tokenizer.json's normalizer as a function of the text. */
function readNormalizer(n: unknown, fail: (msg: string) => never, name: string): Normalize {
  if (n === null || n === undefined) return (s) => s;
  if (!isObject(n)) return fail(`normalizer must be an object or null, got ${JSON.stringify(n)}`);
  if (n.type === 'Sequence' && Array.isArray(n.normalizers)) {
    const steps = n.normalizers.map((x) => readNormalizer(x, fail, name));
    return (s) => steps.reduce((acc, f) => f(acc), s);
  }
  if (n.type === 'Precompiled') {
    if (typeof n.precompiled_charsmap !== 'string') fail('normalizer Precompiled needs precompiled_charsmap (base64)');
    const charsmap = Uint8Array.from(atob(n.precompiled_charsmap as string), (c) => c.charCodeAt(0));
    // The compiled rules alone: no dummy prefix, no whitespace handling (those are the Metaspace's and Replace's).
    const spec = {
      name: 'precompiled',
      precompiledCharsmap: charsmap,
      addDummyPrefix: false,
      removeExtraWhitespaces: false,
      escapeWhitespaces: false,
    };
    const norm = new SpmNormalizer(spec, false, null, name);
    return (s) => decoder.decode(norm.normalize(encoder.encode(s)));
  }
  if (n.type === 'Replace' && isObject(n.pattern) && typeof n.content === 'string') {
    const content = n.content;
    if (typeof n.pattern.Regex === 'string') {
      const re = new RegExp(n.pattern.Regex, 'gu');
      return (s) => s.replace(re, () => content);
    }
    if (typeof n.pattern.String === 'string') {
      const from = n.pattern.String;
      return (s) => s.replaceAll(from, content);
    }
  }
  return fail(
    `normalizer ${JSON.stringify(n.type)} is not supported ` +
      '(supported: Precompiled, Replace, a Sequence of them, or null)',
  );
}
