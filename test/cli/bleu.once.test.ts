/** `qkv bleu`: scoring files without decoding, the paired bootstrap between them, and bad input. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../e2e/tiny-model.ts';
import { corpusBleu } from '../../src/text/bleu.ts';
import { corpusChrf } from '../../src/text/chrf.ts';
import { pairedBootstrap } from '../../src/text/significance.ts';
import { multi30kLines, qkv } from '../helpers/cli.ts';

const work = tempDir('qkv-bleu-');
const refs = multi30kLines('val.de.gz').slice(0, -1); // the file ends with a newline
const write = (name: string, lines: readonly string[]): string => {
  const f = join(work, name);
  writeFileSync(f, `${lines.join('\n')}\n`);
  return f;
};
// The references themselves (BLEU 100), every sentence cut to its first half, and the same with
// every third sentence left whole: three systems of known order.
const half = (s: string) =>
  s
    .split(' ')
    .slice(0, Math.ceil(s.split(' ').length / 2))
    .join(' ');
const perfect = write('perfect.de', refs);
const cut = write('cut.de', refs.map(half));
const mixed = write(
  'mixed.de',
  refs.map((s, i) => (i % 3 === 0 ? s : half(s))),
);
const SIGNATURE = 'nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.4.0-qkv';

test('qkv bleu FILE --split val prints corpus BLEU as sacreBLEU does, with its signature', () => {
  const r = qkv(['bleu', cut, '--split', 'val']);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, `${corpusBleu(refs.map(half), refs).toString()}\n${SIGNATURE}\n`);
  const p = qkv(['bleu', perfect, '--ref', join('data/multi30k', 'val.de.gz')]);
  assert.equal(p.status, 0, p.stderr);
  assert.equal(
    p.stdout,
    `BLEU = 100.00 100.0/100.0/100.0/100.0 (BP = 1.000 ratio = 1.000 hyp_len = 12825 ref_len = 12825)\n${SIGNATURE}\n`,
  );
});

test('qkv bleu --lowercase scores case-insensitively and says case:lc', () => {
  // Lowercased, not uppercased: 'ß'.toUpperCase() is 'SS', which does not lowercase back.
  const lower = write(
    'lower.de',
    refs.map((s) => s.toLowerCase()),
  );
  const cased = qkv(['bleu', lower, '--split', 'val']);
  assert.equal(cased.status, 0, cased.stderr);
  assert.equal(
    cased.stdout.split('\n')[0],
    corpusBleu(
      refs.map((s) => s.toLowerCase()),
      refs,
    ).toString(),
  );
  assert.ok(!cased.stdout.startsWith('BLEU = 100.00'), cased.stdout);
  const lc = qkv(['bleu', lower, '--split', 'val', '--lowercase']);
  assert.equal(lc.status, 0, lc.stderr);
  assert.match(lc.stdout, /^BLEU = 100\.00 /);
  assert.match(lc.stdout, /\nnrefs:1\|case:lc\|/);
});

test('qkv bleu A B C --paired-bs: each file scored, each compared with the first by paired bootstrap', () => {
  const r = qkv(['bleu', mixed, cut, perfect, mixed, '--split', 'val', '--paired-bs']);
  assert.equal(r.status, 0, r.stderr);
  const lines = r.stdout.trimEnd().split('\n');
  const mixedScore = corpusBleu(
    refs.map((s, i) => (i % 3 === 0 ? s : half(s))),
    refs,
  );
  const cutScore = corpusBleu(refs.map(half), refs);
  assert.deepEqual(lines.slice(0, 4), [
    `${mixed}: ${mixedScore.toString()}`,
    `${cut}: ${cutScore.toString()}`,
    `${perfect}: ${corpusBleu(refs, refs).toString()}`,
    `${mixed}: ${mixedScore.toString()}`,
  ]);
  // Every resample of the worse system loses, of the perfect one wins, of the same file ties.
  const t = pairedBootstrap(
    refs.map((s, i) => (i % 3 === 0 ? s : half(s))),
    refs.map(half),
    refs,
  );
  assert.equal(t.wins, 0);
  assert.equal(
    lines[4],
    `${cut} against ${mixed}: ${(cutScore.score - mixedScore.score).toFixed(2)} BLEU, won 0 of 1000 paired bootstrap resamples, p 1.0000, Δ BLEU 95% [${t.delta95[0].toFixed(2)}, ${t.delta95[1].toFixed(2)}]`,
  );
  assert.match(
    lines[5],
    new RegExp(
      `^${perfect} against ${mixed}: \\+${(100 - mixedScore.score).toFixed(2)} BLEU, won 1000 of 1000 paired bootstrap resamples, p 0\\.0010, `,
    ),
  );
  assert.equal(
    lines[6],
    `${mixed} against ${mixed}: +0.00 BLEU, won 0 of 1000 paired bootstrap resamples, p 1.0000, Δ BLEU 95% [0.00, 0.00]`,
  );
  assert.equal(lines[7], SIGNATURE);
  assert.equal(lines.length, 8);
  const few = qkv(['bleu', mixed, perfect, '--split', 'val', '--paired-bs', '--samples', '50']);
  assert.equal(few.status, 0, few.stderr);
  assert.match(few.stdout, /won 50 of 50 paired bootstrap resamples, p 0\.0196,/);
});

test('qkv bleu --chrf adds chrF2 (sacreBLEU -m chrf) after BLEU, for one file or several', () => {
  const chrfSignature = 'nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.4.0-qkv';
  const one = qkv(['bleu', cut, '--split', 'val', '--chrf']);
  assert.equal(one.status, 0, one.stderr);
  const c = corpusChrf(refs.map(half), refs);
  assert.ok(c.score > 20 && c.score < 80, String(c));
  assert.equal(
    one.stdout,
    `${corpusBleu(refs.map(half), refs).toString()}\n${SIGNATURE}\n${c.toString()}\n${chrfSignature}\n`,
  );
  const two = qkv(['bleu', cut, perfect, '--split', 'val', '--chrf', '--lowercase']);
  assert.equal(two.status, 0, two.stderr);
  const lines = two.stdout.trimEnd().split('\n');
  assert.deepEqual(lines.slice(3), [
    `${cut}: ${corpusChrf(refs.map(half), refs, { lowercase: true }).toString()}`,
    `${perfect}: chrF2 = 100.00`,
    chrfSignature.replace('case:mixed', 'case:lc'),
  ]);
});

test('qkv bleu: bad input is one clear line naming what is wrong, exit 1', () => {
  const short = write('short.de', refs.slice(0, 10));
  const cases: [string[], RegExp][] = [
    [[short, '--split', 'val'], /short\.de has 10 lines but the references \(data\/multi30k\/val\.de\) have 1014/],
    [[join(work, 'nothing.de'), '--split', 'val'], /hypothesis file not found: .*nothing\.de/],
    [[cut], /no references: pass --ref FILE or --split NAME/],
    [[cut, '--split', 'val', '--ref', perfect], /--ref and --split both given/],
    [[cut, '--ref', join(work, 'missing.de')], /--ref: file not found: .*missing\.de/],
    [[cut, '--split', 'dev'], /corpus file not found: data\/multi30k\/dev\.de/],
    [
      [cut, '--split', 'val', '--paired-bs'],
      /--paired-bs needs two or more files \(the first is the baseline\), got 1/,
    ],
    [[cut, perfect, '--split', 'val', '--samples', '10'], /--samples without --paired-bs/],
    [
      [cut, perfect, '--split', 'val', '--paired-bs', '--samples', '0'],
      /--samples must be a positive integer, got '0'/,
    ],
    [[cut, '--split', 'val', '--tgt', 'de', '--direction', 'en-fr'], /--tgt and --direction both given/],
    // No file: the translations come from stdin (here an empty pipe), as sacreBLEU reads them.
    [['--split', 'val'], /stdin has 0 lines but the references \(data\/multi30k\/val\.de\) have 1014/],
  ];
  for (const [args, message] of cases) {
    const r = qkv(['bleu', ...args]);
    assert.equal(r.status, 1, `${args.join(' ')}: ${r.stdout}`);
    assert.match(r.stderr, message, args.join(' '));
    assert.equal(r.stdout, '', args.join(' '));
  }
});
