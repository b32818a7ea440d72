/**
 * chooseAlpha, the rule `qkv eval --tune-alpha` applies: the paper's α stays unless the best
 * other α scores higher and wins a paired bootstrap at p < 0.05 / (number of other α).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { readParallel } from '../../src/cli/corpus.ts';
import { chooseAlpha, type AlphaRun } from '../../src/cli/commands/eval.ts';
import { corpusBleu } from '../../src/text/index.ts';

const refs = readParallel(fileURLToPath(new URL('../../data/multi30k', import.meta.url)), 'val', 'en', 'de').tgt.slice(
  0,
  300,
);
const run = (alpha: number, hyps: string[]): AlphaRun => ({ alpha, hyps, score: corpusBleu(hyps, refs) });
/** The references with the last word dropped on the chosen lines. */
const damaged = (pick: (i: number) => boolean) =>
  refs.map((r, i) => (pick(i) ? r.split(' ').slice(0, -1).join(' ') : r));

test("a clearly better α replaces the paper's: better on a third of the lines, equal elsewhere", () => {
  const logs: string[] = [];
  const base = run(
    0.6,
    damaged((i) => i % 3 === 0),
  );
  const worse = run(
    1,
    damaged(() => true),
  );
  const better = run(2, refs);
  const { chosen, why } = chooseAlpha([base, worse, better], refs, (s) => logs.push(s));
  assert.equal(chosen.alpha, 2);
  assert.match(why, /^beats α 0\.6 \([\d.]+\) with p 0\.0010 in a paired bootstrap, needed < 0\.025$/);
  assert.match(
    logs.join('\n'),
    /α 2 against α 0\.6: won 1000 of 1000 paired bootstrap resamples, p 0\.0010 \(needs < 0\.025\)/,
  );
});

test("the top of the grid by a hair keeps the paper's α: better on one line in 300", () => {
  const base = run(
    0.6,
    damaged((i) => i % 3 === 0),
  );
  const hair = run(
    1.4,
    damaged((i) => i % 3 === 0 && i !== 0),
  );
  assert.ok(hair.score.score > base.score.score, 'it does score higher');
  const { chosen, why } = chooseAlpha(
    [
      base,
      run(
        1,
        damaged(() => true),
      ),
      hair,
      run(
        1.8,
        damaged(() => true),
      ),
    ],
    refs,
    () => {},
  );
  assert.equal(chosen.alpha, 0.6);
  assert.match(why, /^α 1\.4 scored [\d.]+, but p [\d.]+ in a paired bootstrap against α 0\.6, needed < 0\.0167$/);
});

test('a tie or a loss never replaces it, and a lone α has nothing to beat', () => {
  const base = run(
    0.6,
    damaged((i) => i % 3 === 0),
  );
  assert.equal(chooseAlpha([base, run(1, base.hyps)], refs, () => {}).chosen.alpha, 0.6);
  assert.equal(
    chooseAlpha(
      [
        base,
        run(
          1,
          damaged(() => true),
        ),
      ],
      refs,
      () => {},
    ).chosen.alpha,
    0.6,
  );
  assert.deepEqual(
    chooseAlpha([base], refs, () => {}),
    { chosen: base, why: 'nothing else tried' },
  );
});
