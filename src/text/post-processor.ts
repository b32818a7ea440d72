/**
 * The post-processor stage of a Hugging Face `tokenizer.json`: what `tokenizers` does to the ids of one text
 * (or a pair of texts) after the model has tokenized them: the special tokens a model expects around its input
 * (`[CLS] a [SEP] b [SEP]` for BERT, `<s> a </s></s> b </s>` for RoBERTa, `<|begin_of_text|> a` for Llama 3,
 * nothing for GPT-2), the token type ids (segment ids) of each position, and which positions are special.
 *
 * Read as `tokenizers` (the Rust library behind transformers) reads them, and held to it by
 * test/text/post-processor.test.ts (fixtures from the real library, scripts/fixtures/make_hf_post_processors.py):
 *
 *   - null (no post-processor) and `ByteLevel` (which only moves offsets) add nothing; a pair's second text
 *     has type id 1;
 *   - `TemplateProcessing`: `single` and `pair` are lists of pieces, `{ Sequence: { id: 'A' | 'B', type_id } }`
 *     (a text) or `{ SpecialToken: { id, type_id } }` (a key of `special_tokens`, which maps it to one or more
 *     ids); without special tokens the texts keep the template's type ids and the special pieces are dropped;
 *   - `BertProcessing` (`cls`, `sep`: [token, id]): `[CLS] A [SEP]`, `[CLS] A [SEP] B [SEP]`, B and its [SEP]
 *     of type 1;
 *   - `RobertaProcessing` (`cls`, `sep`): `<s> A </s>`, `<s> A </s> </s> B </s>`, every type id 0 (with or
 *     without special tokens);
 *   - `Sequence` (`processors`): each in turn.
 *
 * Anything else is refused by its `type`.
 */

/** One text or pair after post-processing: the ids the model is fed, with their type ids and special flags. */
export interface Encoded {
  /** The ids, special tokens included. */
  ids: number[];
  /** The token type (segment) id of each position: 0 for the first text, 1 for the second, as the rules say. */
  typeIds: number[];
  /** 1 where the id was added by the post-processor (a special token), 0 where it came from a text. */
  specialTokensMask: number[];
}

/** A tokenizer.json post-processor: the special tokens and type ids around one text or a pair. */
export interface PostProcessor {
  /** Its `type` as tokenizer.json names it ('none' for null). */
  readonly kind: string;
  /** How many special tokens it adds to one text (`pair` false) or to a pair (`pair` true). */
  addedTokens(pair: boolean): number;
  /** The ids with the special tokens it adds (`addSpecialTokens` false: the texts alone, with their type ids). */
  process(a: readonly number[], b?: readonly number[], addSpecialTokens?: boolean): Encoded;
}

/** One piece of a template: a text (A or B) or a special token's ids, with the type id of its positions. */
type Piece = { text: 'A' | 'B'; typeId: number } | { ids: number[]; typeId: number };

/** The pieces of a text alone and of a pair, and how type ids go when no special token is added. */
interface Template {
  single: Piece[];
  pair: Piece[];
}

function kindOf(x: unknown): string {
  if (x === null) return 'null';
  if (Array.isArray(x)) return 'an array';
  if (typeof x === 'object') {
    const t = (x as { type?: unknown }).type;
    return t === undefined ? 'an object without "type"' : `'${String(t)}'`;
  }
  return typeof x;
}

function fail(where: string, message: string): never {
  throw new Error(`tokenizer.json: ${where}: ${message}`);
}

/** A [token, id] pair of BertProcessing/RobertaProcessing. */
function tokenPair(p: Record<string, unknown>, key: string, where: string): number {
  const v = p[key];
  if (!Array.isArray(v) || v.length !== 2 || typeof v[0] !== 'string' || !Number.isInteger(v[1]) || v[1] < 0)
    fail(where, `${key} must be [token, id], got ${JSON.stringify(v)}`);
  return v[1] as number;
}

function typeIdOf(x: unknown, where: string): number {
  if (!Number.isInteger(x) || (x as number) < 0)
    fail(where, `type_id must be an integer >= 0, got ${JSON.stringify(x)}`);
  return x as number;
}

/** TemplateProcessing's pieces, the special tokens resolved to their ids. */
function templatePieces(list: unknown, specials: Map<string, number[]>, where: string): Piece[] {
  if (!Array.isArray(list)) fail(where, `expected a list of pieces, got ${kindOf(list)}`);
  return list.map((item, i) => {
    const at = `${where}[${i}]`;
    const o = item as Record<string, Record<string, unknown> | undefined> | null;
    if (o?.Sequence) {
      const id = o.Sequence.id;
      if (id !== 'A' && id !== 'B') fail(at, `Sequence id must be 'A' or 'B', got ${JSON.stringify(id)}`);
      return { text: id, typeId: typeIdOf(o.Sequence.type_id, at) };
    }
    if (o?.SpecialToken) {
      const name = o.SpecialToken.id;
      const ids = typeof name === 'string' ? specials.get(name) : undefined;
      if (ids === undefined)
        fail(
          at,
          `SpecialToken ${JSON.stringify(name)} is not a key of special_tokens (${[...specials.keys()].join(', ')})`,
        );
      return { ids, typeId: typeIdOf(o.SpecialToken.type_id, at) };
    }
    return fail(at, `expected { Sequence } or { SpecialToken }, got ${JSON.stringify(item)}`);
  });
}

/** The special_tokens map of a TemplateProcessing: name → ids. */
function templateSpecials(x: unknown, where: string): Map<string, number[]> {
  const out = new Map<string, number[]>();
  if (x === undefined || x === null) return out;
  if (typeof x !== 'object' || Array.isArray(x)) fail(where, `special_tokens must be an object, got ${kindOf(x)}`);
  for (const [name, v] of Object.entries(x as Record<string, unknown>)) {
    const ids = (v as { ids?: unknown } | null)?.ids;
    if (!Array.isArray(ids) || ids.length === 0 || !ids.every((id) => Number.isInteger(id) && id >= 0))
      fail(
        where,
        `special_tokens[${JSON.stringify(name)}].ids must be a non-empty list of ids, got ${JSON.stringify(ids)}`,
      );
    out.set(name, ids as number[]);
  }
  return out;
}

function fromTemplate(kind: string, t: Template, plainTypes?: [number, number]): PostProcessor {
  const count = (pieces: Piece[]) => pieces.reduce((n, p) => n + ('ids' in p ? p.ids.length : 0), 0);
  return {
    kind,
    addedTokens: (pair) => count(pair ? t.pair : t.single),
    process(a, b, addSpecialTokens = true) {
      const out: Encoded = { ids: [], typeIds: [], specialTokensMask: [] };
      for (const p of b === undefined ? t.single : t.pair) {
        if ('ids' in p) {
          if (!addSpecialTokens) continue;
          for (const id of p.ids) {
            out.ids.push(id);
            out.typeIds.push(p.typeId);
            out.specialTokensMask.push(1);
          }
          continue;
        }
        const text = p.text === 'A' ? a : b;
        if (text === undefined) continue; // a single-text template never names B
        const typeId = !addSpecialTokens && plainTypes ? plainTypes[p.text === 'A' ? 0 : 1] : p.typeId;
        for (const id of text) {
          out.ids.push(id);
          out.typeIds.push(typeId);
          out.specialTokensMask.push(0);
        }
      }
      return out;
    },
  };
}

/** null and ByteLevel: the texts as they are, the pair's second of type 1. */
const PLAIN: Template = {
  single: [{ text: 'A', typeId: 0 }],
  pair: [
    { text: 'A', typeId: 0 },
    { text: 'B', typeId: 1 },
  ],
};

/**
 * tokenizer.json's `post_processor` (null or absent included) as a {@link PostProcessor}; a kind it does not
 * know, or a malformed one, is an Error naming it.
 */
export function postProcessorFromJSON(json: unknown, where = 'post_processor'): PostProcessor {
  if (json === null || json === undefined) return fromTemplate('none', PLAIN);
  if (typeof json !== 'object' || Array.isArray(json)) fail(where, `expected an object or null, got ${kindOf(json)}`);
  const p = json as Record<string, unknown>;
  switch (p.type) {
    case 'ByteLevel':
      return fromTemplate('ByteLevel', PLAIN);
    case 'TemplateProcessing': {
      const specials = templateSpecials(p.special_tokens, where);
      return fromTemplate('TemplateProcessing', {
        single: templatePieces(p.single, specials, `${where}.single`),
        pair: templatePieces(p.pair, specials, `${where}.pair`),
      });
    }
    case 'BertProcessing': {
      const cls = tokenPair(p, 'cls', where);
      const sep = tokenPair(p, 'sep', where);
      return fromTemplate(
        'BertProcessing',
        {
          single: [
            { ids: [cls], typeId: 0 },
            { text: 'A', typeId: 0 },
            { ids: [sep], typeId: 0 },
          ],
          pair: [
            { ids: [cls], typeId: 0 },
            { text: 'A', typeId: 0 },
            { ids: [sep], typeId: 0 },
            { text: 'B', typeId: 1 },
            { ids: [sep], typeId: 1 },
          ],
        },
        [0, 1],
      );
    }
    case 'RobertaProcessing': {
      const cls = tokenPair(p, 'cls', where);
      const sep = tokenPair(p, 'sep', where);
      return fromTemplate('RobertaProcessing', {
        single: [
          { ids: [cls], typeId: 0 },
          { text: 'A', typeId: 0 },
          { ids: [sep], typeId: 0 },
        ],
        pair: [
          { ids: [cls], typeId: 0 },
          { text: 'A', typeId: 0 },
          { ids: [sep, sep], typeId: 0 },
          { text: 'B', typeId: 0 },
          { ids: [sep], typeId: 0 },
        ],
      });
    }
    case 'Sequence': {
      if (!Array.isArray(p.processors))
        fail(where, `a Sequence's processors must be a list, got ${kindOf(p.processors)}`);
      const steps = p.processors.map((q, i) => postProcessorFromJSON(q, `${where}.processors[${i}]`));
      return sequence(steps);
    }
    default:
      return fail(
        where,
        `post-processor ${kindOf(p)} is not supported (qkv reads ByteLevel, TemplateProcessing, BertProcessing, ` +
          'RobertaProcessing, Sequence of these, or null)',
      );
  }
}

/**
 * Processors in turn. Only one of them may add tokens or set type ids (ByteLevel steps around it change neither),
 * which is every Sequence the Hub's tokenizers carry (Llama 3's ByteLevel then TemplateProcessing); two that
 * both add tokens are refused rather than guessed at.
 */
function sequence(steps: PostProcessor[]): PostProcessor {
  const acting = steps.filter((s) => s.kind !== 'ByteLevel' && s.kind !== 'none');
  if (acting.length > 1)
    fail(
      'post_processor',
      'a Sequence with more than one processor that adds tokens ' +
        `(${acting.map((s) => s.kind).join(', ')}) is not supported`,
    );
  const inner = acting[0] ?? fromTemplate('none', PLAIN);
  return { ...inner, kind: `Sequence(${steps.map((s) => s.kind).join(', ')})` };
}

/**
 * The TemplateProcessing transformers 5 builds when tokenizer_config.json sets `add_bos_token` or `add_eos_token`
 * (or tokenizer.json has no post-processor): `[bos:0] $A:0 [eos:0]`, and for a pair the same again for B with
 * type id 1 (`update_post_processor` in transformers' tokenization_utils_tokenizers.py).
 */
export function bosEosPostProcessor(bosId: number | null, eosId: number | null): PostProcessor {
  const single: Piece[] = [];
  const pair: Piece[] = [];
  if (bosId !== null) single.push({ ids: [bosId], typeId: 0 });
  single.push({ text: 'A', typeId: 0 });
  if (eosId !== null) single.push({ ids: [eosId], typeId: 0 });
  pair.push(...single);
  if (bosId !== null) pair.push({ ids: [bosId], typeId: 1 });
  pair.push({ text: 'B', typeId: 1 });
  if (eosId !== null) pair.push({ ids: [eosId], typeId: 1 });
  const kind = bosId === null && eosId === null ? 'none' : 'TemplateProcessing';
  return fromTemplate(kind, { single, pair });
}
