/**
 * text.tokenizerFromJSON loads every tokenizer qkv writes: the shipped translation tokenizers
 * (pre-tokenizer Sequence [Metaspace, Split punctuation]), the shipped char GPT's, a plain
 * Metaspace BPE, and GPT-2's byte-level one; each encodes as its own class does.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { text } from '../../src/index.ts';
import { root } from '../helpers/cli.ts';

const read = (p: string) => JSON.parse(readFileSync(join(root, p), 'utf8')) as Record<string, unknown>;

test('the shipped translation tokenizers (a Sequence of two pre-tokenizers) load as BPE', () => {
  for (const p of [
    'models/multi30k-en-de/tokenizer.json',
    'models/multi30k-en-fr/tokenizer.json',
    'models/multi30k-en-de/member-2/tokenizer.json',
  ]) {
    const j = read(p);
    assert.equal((j.pre_tokenizer as { type: string; pretokenizers: unknown[] }).type, 'Sequence', p);
    assert.equal((j.pre_tokenizer as { pretokenizers: unknown[] }).pretokenizers.length, 2, p);
    assert.equal(text.tokenizerKind(j), 'bpe', p);
    const t = text.tokenizerFromJSON(j);
    assert.ok(t instanceof text.BpeTokenizer, p);
    const direct = text.BpeTokenizer.fromJSON(j);
    assert.ok(direct.splitPunctuation);
    const s = 'A man, in a blue shirt, rides a bike.';
    assert.deepEqual(t.encode(s), direct.encode(s));
    assert.equal(t.decode(t.encode(s)), s);
  }
});

test('every other kind qkv writes or reads: chars, plain BPE, byte-level', () => {
  assert.ok(text.tokenizerFromJSON(read('models/gpt-multi30k-char/tokenizer.json')) instanceof text.CharTokenizer);
  const plain = text.BpeTokenizer.learn(['a man rides a bike', 'two dogs play'], { vocabSize: 40 });
  const again = text.tokenizerFromJSON(JSON.parse(JSON.stringify(plain)));
  assert.ok(again instanceof text.BpeTokenizer);
  assert.deepEqual(again.encode('a dog rides'), plain.encode('a dog rides'));
  assert.ok(
    text.tokenizerFromJSON(read('test/fixtures/hf-gpt2-tiny/tokenizer.json')) instanceof text.ByteLevelBpeTokenizer,
  );
});

test("a Sequence that is not qkv's is still refused by name", () => {
  const j = read('models/multi30k-en-de/tokenizer.json');
  const seq = j.pre_tokenizer as { pretokenizers: unknown[] };
  assert.throws(
    () =>
      text.tokenizerFromJSON({
        ...j,
        pre_tokenizer: { type: 'Sequence', pretokenizers: [seq.pretokenizers[0], { type: 'Digits' }] },
      }),
    /pre_tokenizer: a Sequence must be \[Metaspace, Split/,
  );
  assert.throws(
    () =>
      text.tokenizerFromJSON({ ...j, pre_tokenizer: { type: 'Sequence', pretokenizers: [{ type: 'Whitespace' }] } }),
    /unsupported pre_tokenizer 'Sequence'/,
  );
  assert.throws(
    () => text.tokenizerFromJSON({ ...j, pre_tokenizer: { type: 'Sequence', pretokenizers: [] } }),
    /unsupported pre_tokenizer 'Sequence'/,
  );
});
