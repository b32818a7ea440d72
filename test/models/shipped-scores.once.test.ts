/**
 * The shipped translation models still translate test_2016_flickr exactly as their stored outputs
 * (records/model-cards/, committed by issue 40), and the model cards' test scores are those outputs'
 * scores. The scores are recomputed from the stored files (as `npm run check-records` does for every
 * claim), not taken from a number qkv printed: the stored output is the evidence, anyone can rescore
 * it with sacreBLEU, and this test ties today's decoding to it line by line. A change to decoding, the
 * tokenizer, the weights' loading that moves a single hypothesis shows here, and so does a card or an
 * output left behind when a model is replaced.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { encodeLines, translateIds } from '../../src/decode/batch.ts';
import { readLines, readParallel } from '../../src/cli/corpus.ts';
import { loadEnsemble } from '../../src/cli/files.ts';
import { corpusBleu } from '../../src/text/bleu.ts';

const root = new URL('../../', import.meta.url).pathname;

for (const [name, tgt] of [
  ['multi30k-en-de', 'de'],
  ['multi30k-en-fr', 'fr'],
] as const) {
  test(`${name}: decodes test_2016_flickr as its stored output; the card's cased and lowercased scores are that output's`, () => {
    const dir = join(root, 'models', name);
    const stored = readLines(join(root, 'records', 'model-cards', `${name}.test_2016_flickr.${tgt}`));
    const { src, tgt: refs } = readParallel(join(root, 'data/multi30k'), 'test_2016_flickr', 'en', tgt);
    // The card quotes the stored output's scores.
    const card = readFileSync(join(dir, 'README.md'), 'utf8');
    const row = card.match(/^\| test_2016_flickr \| [^|]* \| \*\*([\d.]+)\*\* `([^`]+)` \|/m);
    assert.ok(row, `${name}/README.md: no test_2016_flickr row with a bold beam score and its details`);
    assert.equal(corpusBleu(stored, refs).toString(), `BLEU = ${row[1]} ${row[2]}`);
    const lc = card
      .replace(/\s+/g, ' ')
      .match(/Lowercased \(`qkv eval --lowercase`[^)]*\)[^:]*: [\d.]+ on val[^,]*, ([\d.]+) on test_2016_flickr/);
    assert.ok(lc, `${name}/README.md: no lowercased test score`);
    assert.equal(corpusBleu(stored, refs, { lowercase: true }).score.toFixed(2), lc[1]);
    // Today's decoding, with the folder's own defaults and ensemble (what qkv eval does), gives the stored output.
    const { members: model, tokenizer, targetTokenizer, config } = loadEnsemble(dir);
    assert.deepEqual({ beam: config.decoding!.beam, alpha: config.decoding!.alpha }, { beam: 4, alpha: 0.6 });
    const hyps = translateIds(model, targetTokenizer, encodeLines(model, tokenizer, src, {}).ids, {
      beam: 4,
      alpha: 0.6,
    });
    assert.equal(hyps.length, stored.length);
    hyps.forEach((h, i) =>
      assert.equal(h, stored[i], `line ${i + 1} differs from records/model-cards/${name}.test_2016_flickr.${tgt}`),
    );
  });
}
