/**
 * tokenizer.json's pipeline for the encoder family (text/hf-tokenizer.ts, text/wordpiece.ts) against the real
 * `tokenizers` 0.23 through transformers 5.18 (scripts/fixtures/make_hf_encoders.py): a WordPiece, a byte-level
 * BPE and a Unigram tokenizer trained on Multi30K and saved by transformers' own classes; ids with and without
 * special tokens, tokens, pairs with type ids, truncation (single and pairs) and decoding, exactly. Also a
 * BERT folder with vocab.txt alone.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { HfTokenizer, longestFirst } from '../../src/text/hf-tokenizer.ts';
import { bertNormalize, bertPreTokenize, cleanupSpaces } from '../../src/text/wordpiece.ts';

const ROOT = fileURLToPath(new URL('../fixtures/hf-encoders/', import.meta.url));
const read = (p: string) => readFileSync(join(ROOT, p), 'utf8');

interface Cases {
  texts: string[];
  pairs: [string, string][];
  ids: number[][];
  idsNoSpecial: number[][];
  tokens: string[][];
  decoded: string[];
  decodedSpecial: string[];
  pairIds: number[][];
  pairTypeIds: (number[] | null)[];
  truncated: number[][];
  pairTruncated: number[][];
}
const CASES: Record<string, Cases> = JSON.parse(read('tokenizers.json'));
const TEXTS = ['A man in a blue shirt is riding a bike down the street.', 'Two dogs play in the snow'];
const FOLDERS: Record<string, string> = { wordpiece: 'bert', bytelevel: 'roberta-mlm', unigram: 'xlm-roberta-mlm' };

function check(name: string, tok: HfTokenizer, c: Cases): void {
  c.texts.forEach((text, i) => {
    const what = `${name} ${JSON.stringify(text)}`;
    assert.deepEqual(tok.encodeInput(text).ids, c.ids[i], `${what}: ids`);
    assert.deepEqual(tok.encodeInput(text, { addSpecialTokens: false }).ids, c.idsNoSpecial[i], `${what}: no special`);
    assert.deepEqual(tok.tokenize(text), c.tokens[i], `${what}: tokens`);
    assert.equal(tok.decode(c.ids[i], { skipSpecialTokens: true }), c.decoded[i], `${what}: decoded`);
    assert.equal(tok.decode(c.ids[i]), c.decodedSpecial[i], `${what}: decoded with special tokens`);
  });
  c.pairs.forEach(([a, b], i) => {
    const e = tok.encodeInput(a, { pair: b });
    assert.deepEqual(e.ids, c.pairIds[i], `${name} pair ${i}: ids`);
    if (c.pairTypeIds[i]) assert.deepEqual(e.typeIds, c.pairTypeIds[i], `${name} pair ${i}: type ids`);
  });
  TEXTS.forEach((t, i) => {
    const e = tok.encodeInput(t, { maxLength: 8 });
    assert.deepEqual(e.ids, c.truncated[i], `${name} truncated ${i}`);
    assert.equal(e.truncated, tok.encodeInput(t).ids.length - 8, `${name} truncated ${i}: count`);
  });
  [...c.pairs, TEXTS].forEach(([a, b], i) => {
    assert.deepEqual(
      tok.encodeInput(a, { pair: b, maxLength: 11 }).ids,
      c.pairTruncated[i],
      `${name} pair truncated ${i}`,
    );
  });
}

for (const [name, folder] of Object.entries(FOLDERS)) {
  test(`${name} (${folder}/tokenizer.json): ids, tokens, pairs, truncation and decoding equal transformers'`, () => {
    const tok = HfTokenizer.fromJSON(JSON.parse(read(`${folder}/tokenizer.json`)));
    check(name, tok, CASES[name]);
  });
}

test("a BERT folder with vocab.txt alone tokenizes as transformers' BertTokenizer", () => {
  const tok = HfTokenizer.fromVocabTxt(
    read('bert-vocab/vocab.txt'),
    JSON.parse(read('bert-vocab/tokenizer_config.json')),
  );
  check('vocab.txt', tok, CASES.wordpiece);
  const expected = JSON.parse(read('bert-vocab/expected.json')) as { texts: string[]; ids: { input_ids: number[][] } };
  expected.texts.forEach((t, i) => {
    const ids = tok.encodeInput(t).ids;
    assert.deepEqual(ids, expected.ids.input_ids[i].slice(0, ids.length));
  });
});

test('BertNormalizer and BertPreTokenizer, stage by stage', () => {
  assert.equal(bertNormalize('Héllo\u0000 W\u00d6RLD\t東京\u200b!'), 'hello world  東  京 !');
  assert.equal(bertNormalize('Héllo', { lowercase: false }), 'Héllo');
  assert.equal(bertNormalize('ΣΑΣ'), 'σασ', 'character by character: no final sigma');
  assert.deepEqual(bertPreTokenize("don't  stop—now..."), ['don', "'", 't', 'stop', '—', 'now', '.', '.', '.']);
  assert.equal(cleanupSpaces(" n't"), "n't");
});

test("longest_first truncation of a pair (tokenizers' rule)", () => {
  const r = (n: number) => Array.from({ length: n }, (_, i) => i);
  assert.deepEqual(longestFirst(r(3), r(10), 8), [r(3), r(5)]);
  assert.deepEqual(longestFirst(r(10), r(3), 8), [r(5), r(3)]);
  assert.deepEqual(longestFirst(r(6), r(6), 7), [r(3), r(4)]);
});

test('what the reader does not do is refused by name', () => {
  const j = JSON.parse(read('bert/tokenizer.json'));
  assert.throws(
    () => HfTokenizer.fromJSON({ ...j, model: { ...j.model, type: 'WordLevel' } }),
    /model\.type 'WordLevel'/,
  );
  assert.throws(
    () => HfTokenizer.fromJSON({ ...j, pre_tokenizer: { type: 'Whitespace' } }),
    /pre_tokenizer must be BertPreTokenizer, got 'Whitespace'/,
  );
  assert.throws(() => HfTokenizer.fromJSON({ ...j, post_processor: { type: 'Frobnicate' } }), /Frobnicate/);
});
