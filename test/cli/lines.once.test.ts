/**
 * Bad input lines lose nothing (issue 13, item 1): `qkv translate` and `qkv eval` write one line per
 * input line, report each over-long line on stderr with its number, and exit 2 when any line was
 * degraded (0 when none, 1 for errors). `qkv eval` reports empty source lines too.
 *
 * Changed by issue 39, point 1 (a behaviour change the issue asks for): for `qkv translate` an
 * empty input line is an empty output line and NOT an error: not reported, not counted, exit 0,
 * from a pipe as with --stream (before, batch mode reported it and exited 2).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeTinyModel, tempDir } from '../e2e/tiny-model.ts';
import { qkv } from '../helpers/cli.ts';

const { dir, tokenizer } = makeTinyModel(); // maxLen 24
const LONG = 'A dog runs in the park. '.repeat(6).trim();
const good = ['A dog runs in the park.', 'Two men are playing soccer.', 'A little girl climbs a tree.'];

test('the long line really is longer than the tiny model reads', () => {
  assert.ok(tokenizer.encode(LONG).length > 24, `${tokenizer.encode(LONG).length} tokens`);
});

test('translate: an over-long line is reported and empty lines are not, the other lines translated, one line out per line in, exit 2', () => {
  const alone = qkv(['translate', '--model', dir, '--beam', '1'], `${good.join('\n')}\n`);
  assert.equal(alone.status, 0, alone.stderr);
  assert.equal(alone.stderr, '', 'no warnings when every line is fine');
  const expected = alone.stdout.split('\n');
  const input = [good[0], '', good[1], LONG, '   ', good[2]];
  const n = tokenizer.encode(LONG).length;
  const r = qkv(['translate', '--model', dir, '--beam', '1'], `${input.join('\n')}\n`);
  assert.equal(r.status, 2, r.stderr);
  const out = r.stdout.split('\n');
  assert.equal(out.length, input.length + 1, r.stdout);
  assert.deepEqual([out[0], out[2], out[5]], expected.slice(0, 3), 'the good lines translate as they do alone');
  assert.equal(out[1], '');
  assert.equal(out[4], '');
  assert.notEqual(out[3], '', 'the long line is translated (truncated)');
  assert.match(r.stderr, new RegExp(`^qkv: line 4: ${n} tokens, truncated to 24$`, 'm'));
  assert.doesNotMatch(r.stderr, /empty/, 'empty lines are not reported');
  assert.match(r.stderr, /^qkv: 1 of 6 lines degraded \(1 truncated\); exit status 2$/m);
  assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');

  // The truncated line is the translation of its first 24 tokens.
  const first24 = tokenizer.decode(tokenizer.encode(LONG).slice(0, 24));
  const cut = qkv(['translate', '--model', dir, '--beam', '1'], `${first24}\n`);
  assert.equal(cut.status, 0, cut.stderr);
  assert.equal(out[3], cut.stdout.split('\n')[0]);

  // --skip-long leaves it untranslated instead; --input/--output files behave the same.
  const inFile = join(tempDir('qkv-lines-'), 'in.txt');
  writeFileSync(inFile, `${input.join('\n')}\n`);
  const outFile = join(tempDir('qkv-lines-'), 'out.txt');
  const s = qkv(['translate', '--model', dir, '--beam', '2', '--skip-long', '--input', inFile, '--output', outFile]);
  assert.equal(s.status, 2, s.stderr);
  const sOut = readFileSync(outFile, 'utf8').split('\n');
  assert.equal(sOut.length, input.length + 1);
  assert.equal(sOut[3], '');
  assert.match(
    s.stderr,
    new RegExp(
      `^qkv: line 4: ${n} tokens, more than the 24 this model reads: left untranslated \\(--skip-long\\)$`,
      'm',
    ),
  );
  assert.match(s.stderr, /1 skipped/);
});

test('translate: empty and blank lines alone are no error: empty lines out, nothing on stderr, exit 0 (from a pipe and with --stream)', () => {
  const input = [good[0], '', good[1], '   ', good[2], ''];
  const alone = qkv(['translate', '--model', dir, '--beam', '1'], `${good.join('\n')}\n`);
  assert.equal(alone.status, 0, alone.stderr);
  const [a, b, c] = alone.stdout.split('\n');
  for (const extra of [[], ['--stream']]) {
    const r = qkv(['translate', '--model', dir, '--beam', '1', ...extra], `${input.join('\n')}\n`);
    assert.equal(r.status, 0, `${extra.join(' ')}: ${r.stderr}`);
    assert.equal(r.stderr, '', `${extra.join(' ')}: nothing reported`);
    assert.equal(r.stdout, `${[a, '', b, '', c, ''].join('\n')}\n`, extra.join(' '));
  }
});

test('translate --help says what happens to bad lines and the exit statuses', () => {
  const h = qkv(['translate', '--help']);
  assert.equal(h.status, 0);
  assert.match(h.stdout, /--skip-long/);
  assert.match(h.stdout, /One output line per input line/);
  assert.match(h.stdout, /Exit status: 0 .* 2 all lines written but some degraded/s);
  assert.match(h.stdout, /An empty \(or blank\) line gives an empty line: it is not an\s+error and is not reported/);
});

test('eval: degraded source lines are counted in the report; BLEU is still printed; exit 2', () => {
  const data = tempDir('qkv-lines-data-');
  mkdirSync(data, { recursive: true });
  writeFileSync(join(data, 'test_2016_flickr.en'), `${[good[0], '', LONG, good[1]].join('\n')}\n`);
  writeFileSync(
    join(data, 'test_2016_flickr.de'),
    'Ein Hund rennt im Park.\nLeer.\nLang.\nZwei Männer spielen Fußball.\n',
  );
  const r = qkv(['eval', '--model', dir, '--data', data, '--beam', '1']);
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stdout, /^BLEU = [\d.]+ /);
  assert.match(r.stderr, /^qkv: line 2: empty, left empty$/m);
  assert.match(r.stderr, /^qkv: line 3: \d+ tokens, truncated to 24$/m);
  assert.match(r.stderr, /^qkv: 2 of 4 lines degraded \(1 empty, 1 truncated\); exit status 2$/m);
  const ok = join(tempDir('qkv-lines-data-'), '');
  writeFileSync(join(ok, 'test_2016_flickr.en'), `${good[0]}\n`);
  writeFileSync(join(ok, 'test_2016_flickr.de'), 'Ein Hund rennt im Park.\n');
  const g = qkv(['eval', '--model', dir, '--data', ok, '--beam', '1']);
  assert.equal(g.status, 0, g.stderr);
});
