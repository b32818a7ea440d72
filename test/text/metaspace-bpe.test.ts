/**
 * text/metaspace-bpe.ts, the SentencePiece BPE model stage of text/hf-tokenizer.ts: what it refuses, by name (its
 * ids and text are held to transformers' NllbTokenizer in test/models/hf/m2m100.test.ts).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { HfTokenizer } from '../../src/text/hf-tokenizer.ts';

const JSON_TEXT = readFileSync(
  fileURLToPath(new URL('../fixtures/hf-seq2seq/nllb/tokenizer.json', import.meta.url)),
  'utf8',
);

function edited(edit: (j: Record<string, any>) => void): Record<string, unknown> {
  const j = JSON.parse(JSON_TEXT);
  edit(j);
  return j;
}

test('HfTokenizer reads a Metaspace BPE tokenizer.json: pieces by merge rank, unknown characters fused', () => {
  const t = HfTokenizer.fromJSON(JSON_TEXT);
  assert.equal(t.modelType, 'BPE');
  const ids = t.encode('A man');
  assert.deepEqual(t.tokenize('A man'), ['▁A', '▁man']);
  assert.equal(t.decode(ids), 'A man');
  // Two characters outside the vocabulary in a row: one <unk> (fuse_unk); the tokens are tokenizers 0.23's for both.
  assert.deepEqual(t.tokenize('A 日本'), ['▁A', '▁', '<unk>']);
});

test('what the Metaspace BPE stage does not do is refused by name', () => {
  const cases: [(j: Record<string, any>) => void, RegExp][] = [
    [(j) => (j.pre_tokenizer.prepend_scheme = 'first'), /pre_tokenizer\.prepend_scheme "first" is not supported/],
    [(j) => (j.model.byte_fallback = true), /model\.byte_fallback true is not supported/],
    [(j) => (j.normalizer = { type: 'NFKC' }), /normalizer "NFKC" is not supported/],
    [(j) => (j.model.unk_token = '<nope>'), /model\.unk_token "<nope>" is not in the vocabulary/],
  ];
  for (const [edit, message] of cases) assert.throws(() => HfTokenizer.fromJSON(edited(edit)), message);
});
