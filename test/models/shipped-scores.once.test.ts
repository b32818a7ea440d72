/**
 * The shipped translation models score what their model cards say on test_2016_flickr, with the
 * folder's own decoding (beam 4, α 0.6: what `qkv eval` does): the cased BLEU in the card's table,
 * with its n-gram precisions, brevity penalty and lengths, and the lowercased score beside it. A
 * change to decoding, the tokenizer, the weights' loading or BLEU that moves a single hypothesis
 * shows here, and so does a card left behind when a model is replaced.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { encodeLines, translateIds } from '../../src/cli/evaluate.ts';
import { readParallel } from '../../src/cli/corpus.ts';
import { loadEnsemble } from '../../src/cli/files.ts';
import { corpusBleu } from '../../src/text/bleu.ts';

const root = new URL('../../', import.meta.url).pathname;

for (const [name, tgt] of [['multi30k-en-de', 'de'], ['multi30k-en-fr', 'fr']] as const) {
  test(`${name}: test_2016_flickr BLEU, cased and lowercased, as its model card says`, () => {
    const dir = join(root, 'models', name);
    const card = readFileSync(join(dir, 'README.md'), 'utf8');
    const row = card.match(/^\| test_2016_flickr \| [\d.]+ \| \*\*([\d.]+)\*\* `([^`]+)` \|/m);
    assert.ok(row, `${name}/README.md: no test_2016_flickr row with a bold beam score and its details`);
    const lc = card.replace(/\s+/g, ' ').match(/Lowercased \(`qkv eval --lowercase`[^)]*\)[^:]*: ([\d.]+) on val, ([\d.]+) on test_2016_flickr/);
    assert.ok(lc, `${name}/README.md: no lowercased scores`);
    // The folder's own decoding: with the ensemble its config.json names, if any (what qkv eval does).
    const { members: model, tokenizer, targetTokenizer, config } = loadEnsemble(dir);
    assert.deepEqual({ beam: config.decoding!.beam, alpha: config.decoding!.alpha }, { beam: 4, alpha: 0.6 });
    const { src, tgt: refs } = readParallel(join(root, 'data/multi30k'), 'test_2016_flickr', 'en', tgt);
    const hyps = translateIds(model, targetTokenizer, encodeLines(model, tokenizer, src, {}).ids, { beam: 4, alpha: 0.6 });
    assert.equal(corpusBleu(hyps, refs).toString(), `BLEU = ${row[1]} ${row[2]}`);
    assert.equal(corpusBleu(hyps, refs, { lowercase: true }).score.toFixed(2), lc[2]);
  });
}
