/**
 * Hugging Face's `NllbTokenizer` (transformers/models/nllb/tokenization_nllb.py) from a folder's tokenizer.json (read
 * by text/hf-tokenizer.ts, its BPE model by text/metaspace-bpe.ts) and tokenizer_config.json: SentencePiece BPE
 * pieces shifted by fairseq's offset (`<s>` 0, `<pad>` 1, `</s>` 2, `<unk>` 3, then the pieces: the ids
 * tokenizer.json holds), the language codes (`eng_Latn`, `deu_Latn`, …) as special added tokens, and per source
 * language the special tokens around a text: `[src_lang] text </s>` (or with tokenizer_config.json's
 * `legacy_behaviour`, `text </s> [src_lang]`). transformers rebuilds that template for each source language, so the
 * post-processor saved in tokenizer.json (the last language it was set to) is not read. The target language is the
 * decoder's first id after its start id: generate()'s `forced_bos_token_id`.
 */
import { HfTokenizer } from './hf-tokenizer.ts';

/** The ids of one language code, or an error naming the option and the codes nearby. */
function codeId(t: NllbTokenizer, code: string, option: string): number {
  const id = t.languageCodes.get(code);
  if (id === undefined) {
    const near = [...t.languageCodes.keys()].filter((c) => c.slice(0, 3) === code.slice(0, 3)).slice(0, 5);
    throw new Error(
      `${option}: '${code}' is not a language code of this tokenizer (codes look like 'eng_Latn', 'deu_Latn'` +
        `${near.length ? `; nearby: ${near.join(', ')}` : ''})`,
    );
  }
  return id;
}

/** A language code: three letters, '_', a four-letter script (FAIRSEQ_LANGUAGE_CODES's form). */
const CODE = /^[a-z]{3}_[A-Z][a-z]{3}$/;

/** Hugging Face's NllbTokenizer. */
export class NllbTokenizer {
  /** tokenizer.json's pipeline (added tokens, normalizer, Metaspace, BPE, decoder). */
  readonly hf: HfTokenizer;
  /** The language codes among the special added tokens, with their ids. */
  readonly languageCodes: Map<string, number>;
  /** The source language a text is encoded for by default (tokenizer_config.json `src_lang`, else eng_Latn). */
  readonly srcLang: string;
  /** tokenizer_config.json `tgt_lang`, or null. */
  readonly tgtLang: string | null;
  /** The code after the text rather than before it (tokenizer_config.json `legacy_behaviour`). */
  readonly legacyBehaviour: boolean;
  readonly padId: number;
  readonly eosId: number;
  readonly unkId: number;

  constructor(tokenizerJson: unknown, tokenizerConfig: Record<string, unknown> | null = null) {
    const json = typeof tokenizerJson === 'string' ? (JSON.parse(tokenizerJson) as unknown) : tokenizerJson;
    this.hf = HfTokenizer.fromJSON(json);
    const c = tokenizerConfig ?? {};
    const tokenId = (key: string, fallback: string): number => {
      const v = c[key] ?? fallback;
      const id = typeof v === 'string' ? this.hf.tokenToId(v) : undefined;
      if (id === undefined)
        throw new Error(`tokenizer_config.json: ${key} ${JSON.stringify(v)} is not in the vocabulary`);
      return id;
    };
    this.padId = tokenId('pad_token', '<pad>');
    this.eosId = tokenId('eos_token', '</s>');
    this.unkId = tokenId('unk_token', '<unk>');
    const added = (json as { added_tokens?: unknown }).added_tokens;
    this.languageCodes = new Map(
      (Array.isArray(added) ? (added as { content?: unknown; id?: unknown }[]) : [])
        .filter((a) => typeof a.content === 'string' && CODE.test(a.content) && this.hf.isSpecial(a.id as number))
        .map((a) => [a.content as string, a.id as number]),
    );
    this.legacyBehaviour = c.legacy_behaviour === true;
    this.srcLang = typeof c.src_lang === 'string' ? c.src_lang : 'eng_Latn';
    this.tgtLang = typeof c.tgt_lang === 'string' ? c.tgt_lang : null;
    codeId(this, this.srcLang, 'tokenizer_config.json: src_lang');
  }

  /** Every id the tokenizer can give (the model's vocabulary must hold at least this many). */
  get vocabSize(): number {
    return this.hf.vocabSize;
  }

  /** A language code's id; an Error naming `option` where the tokenizer has no such code. */
  languageId(code: string, option = 'language'): number {
    return codeId(this, code, option);
  }

  /** The ids of a text for source language `srcLang` (default the tokenizer's), special tokens around it. */
  encode(text: string, srcLang: string = this.srcLang): number[] {
    const lang = this.languageId(srcLang, 'srcLang');
    const ids = this.hf.encode(text);
    return this.legacyBehaviour ? [...ids, this.eosId, lang] : [lang, ...ids, this.eosId];
  }

  /** The text of ids, special tokens (the language codes, `</s>`, …) dropped. */
  decode(ids: readonly number[]): string {
    return this.hf.decode(ids, { skipSpecialTokens: true });
  }
}
