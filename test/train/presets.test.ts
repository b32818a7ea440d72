/** The presets: `multi30k-wu` is the recipe the shipped translation models were trained with. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PRESETS } from '../../src/train/presets.ts';
import { PAPER_RECIPE } from '../../src/train/trainer.ts';
import { root } from '../helpers/cli.ts';

for (const name of ['multi30k-en-de', 'multi30k-en-fr']) {
  test(`--preset multi30k-wu is models/${name}'s recipe: model shape, optimiser, regularisation, vocabulary, stopping and averaging`, () => {
    const config = JSON.parse(readFileSync(join(root, 'models', name, 'config.json'), 'utf8'));
    const p = PRESETS.seq2seq['multi30k-wu'];
    const { vocabSize: _v, padId: _p, ...shape } = p.model;
    const { vocabSize: _sv, padId: _sp, ...shipped } = config.model;
    assert.deepEqual(shape, shipped);
    assert.deepEqual({ ...PAPER_RECIPE, ...p.recipe }, config.training.recipe);
    assert.deepEqual({ vocabSize: p.vocabSize, splitPunctuation: p.splitPunctuation }, config.training.bpe);
    const t = config.training;
    assert.deepEqual(
      [p.evalEvery, p.saveEvery, p.patience, p.average, p.keep],
      [t.evalEvery, t.saveEvery, t.patience, t.average, t.keep],
    );
  });
}
