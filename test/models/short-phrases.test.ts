/**
 * The short-phrase regression set (issue 12, `data/short-phrases/en-de.tsv`) against the shipped
 * EN→DE model, with the folder's own decoding defaults (what `qkv translate` does). The phrases the
 * shipped model gets wrong are listed: the test fails when another phrase breaks, and also when a
 * listed one starts to pass (update the list: the model got better). The checker itself is tested
 * on outputs written by hand.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { encodeLines, translateIds } from '../../src/decode/batch.ts';
import { loadEnsemble } from '../../src/cli/files.ts';
import { checkPhrase, parsePhrases } from '../../src/text/index.ts';

const root = new URL('../../', import.meta.url).pathname;
const phrases = parsePhrases(readFileSync(join(root, 'data/short-phrases/en-de.tsv'), 'utf8'), 'en-de.tsv');

// What the shipped model gets wrong (its model card lists the translations): the folder decodes
// with its two-member ensemble, which gets all 12 right; its own model alone (--no-ensemble, the
// model shipped before) repeats two nouns.
const KNOWN_FAILURES: Record<string, Record<string, string>> = {
  ensemble: {},
  alone: { 'A man.': 'repeats mann', 'A bird.': 'repeats vogel' },
};

test('checker: required words (any alternative, whole words, any case), repeats, length', () => {
  const [dog, cat] = [phrases.find((p) => p.source === 'A dog.')!, phrases.find((p) => p.source === 'A cat runs.')!];
  assert.deepEqual(checkPhrase(dog, 'Ein Hund.'), []);
  assert.deepEqual(checkPhrase(dog, 'Ein Hund Hund mit einem Hund.'), ['repeats hund', '6 words for a phrase of 2']);
  assert.deepEqual(checkPhrase(dog, 'Ein Hundebesitzer.'), ['no Hund']);
  assert.deepEqual(checkPhrase(cat, 'Eine Katze rennt.'), []);
  assert.deepEqual(checkPhrase(cat, 'Eine katze LÄUFT.'), []);
  assert.deepEqual(checkPhrase(cat, 'Eine Katze läuft durch eine Katze.'), ['repeats katze']); // 6 words: not more than twice 3
  assert.deepEqual(checkPhrase(cat, 'Eine Katze läuft und läuft und springt.'), [
    'repeats läuft',
    '7 words for a phrase of 3',
  ]);
  assert.deepEqual(checkPhrase(cat, 'Ein Hund.'), ['no Katze', 'no läuft or rennt']);
  // Articles and prepositions may repeat.
  assert.deepEqual(
    checkPhrase({ source: 'A cat on a cat.', required: [['Katze']] }, 'Eine Katze auf einer Katze auf'),
    ['repeats katze'],
  );
});

test('the set parses: 12 phrases; a malformed line is named', () => {
  assert.equal(phrases.length, 12);
  assert.deepEqual(phrases[1], { source: 'A cat runs.', required: [['Katze'], ['läuft', 'rennt']] });
  assert.throws(
    () => parsePhrases('# c\nA dog. Hund\n', 'x.tsv'),
    /x\.tsv:2: expected "phrase<TAB>required words", got "A dog\. Hund"/,
  );
  assert.throws(() => parsePhrases('A dog.\tHund; \n', 'x.tsv'), /x\.tsv:1: an empty group/);
});

for (const how of ['ensemble', 'alone'] as const) {
  test(`shipped EN→DE model (${how === 'ensemble' ? 'its ensemble, the default' : '--no-ensemble'}): the short phrases it gets wrong are exactly the known ones`, () => {
    const {
      members: model,
      tokenizer,
      targetTokenizer,
      config,
    } = loadEnsemble(join(root, 'models/multi30k-en-de'), [], { own: how === 'ensemble' });
    assert.equal(model.length, how === 'ensemble' ? 2 : 1);
    const { ids } = encodeLines(
      model,
      tokenizer,
      phrases.map((p) => p.source),
      {},
    );
    const out = translateIds(model, targetTokenizer, ids, {
      beam: config.decoding!.beam,
      alpha: config.decoding!.alpha,
    });
    const failures: Record<string, string> = {};
    phrases.forEach((p, i) => {
      const problems = checkPhrase(p, out[i]);
      if (problems.length > 0) failures[p.source] = problems[0];
    });
    assert.deepEqual(failures, KNOWN_FAILURES[how], `translations: ${JSON.stringify(out)}`);
  });
}
