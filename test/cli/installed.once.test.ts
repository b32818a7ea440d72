/**
 * The CLI as an installed command (issue 38, item 5) and generate's statistics (issue 39): `qkv
 * --version` from package.json wherever qkv is run from; without --data and without data/multi30k/
 * in the working directory, train, train-lm and eval say what the corpus is, which files they need
 * and where to get them (one line, exit 1); no `.gz.gz` in a missing-file message.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../e2e/tiny-model.ts';
import { qkv, root } from '../helpers/cli.ts';

/** `qkv ARGS` run from `cwd` (tsx found from here, not from cwd). */
function qkvIn(cwd: string, args: string[]) {
  return spawnSync(process.execPath, ['--import', import.meta.resolve('tsx'), join(root, 'src/cli/main.ts'), ...args], {
    encoding: 'utf8',
    cwd,
  });
}

const empty = tempDir('qkv-no-data-');

test("qkv --version prints package.json's version, also from another folder", () => {
  const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };
  for (const r of [qkv(['--version']), qkvIn(empty, ['--version']), qkvIn(empty, ['-V'])]) {
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, `${version}\n`);
  }
});

test('train, train-lm and eval without --data and without data/multi30k/ say what Multi30K is, which files, and where to get it', () => {
  const cases: [string[], string][] = [
    [['train', '--out', join(empty, 'run')], 'train.en.gz, train.de.gz, val.en.gz, val.de.gz'],
    [['train', '--out', join(empty, 'run'), '--direction', 'en-fr'], 'train.en.gz, train.fr.gz, val.en.gz, val.fr.gz'],
    [['train-lm', '--out', join(empty, 'lm')], 'train.en.gz, val.en.gz'],
    [['eval', '--model', join(root, 'models/multi30k-en-de'), '--split', 'val', '--tgt', 'de'], 'val.en.gz, val.de.gz'],
    [
      ['data', 'encode', '--model', join(root, 'models/multi30k-en-de'), '--out', join(empty, 'x')],
      'train.en.gz, train.de.gz',
    ],
  ];
  for (const [args, files] of cases) {
    const r = qkvIn(empty, args);
    assert.equal(r.status, 1, `${args.join(' ')}: ${r.stderr}`);
    assert.equal(r.stderr.trim().split('\n').length, 1, `one line: ${r.stderr}`);
    assert.match(r.stderr, /^qkv: no corpus: --data not given and there is no data\/multi30k\/ in /);
    assert.ok(r.stderr.includes(empty), 'names the working directory');
    assert.match(r.stderr, /Multi30K/);
    assert.ok(r.stderr.includes(`this needs ${files}.`), `${args.join(' ')}: ${r.stderr}`);
    assert.match(
      r.stderr,
      /qkv's repository \(its data\/multi30k\/ folder\) or from https:\/\/github\.com\/multi30k\/dataset/,
    );
    assert.match(r.stderr, /or pass --data DIR$/m);
    assert.doesNotMatch(r.stderr, /\.gz\.gz/);
  }
  // From the repository root the shipped corpus is found: no such message (the run fails later, on purpose).
  const here = qkv(['train', '--out', join(empty, 'run'), '--preset', 'huge']);
  assert.equal(here.status, 1);
  assert.match(here.stderr, /unknown preset 'huge'/);
});

test('a missing corpus file is named once: no .gz.gz for a path that already ends in .gz', () => {
  const gz = qkvIn(empty, ['train-lm', '--out', join(empty, 'lm2'), '--data', 'nosuch.txt.gz']);
  assert.equal(gz.status, 1, gz.stderr);
  assert.equal(gz.stderr, 'qkv: corpus file not found: nosuch.txt.gz\n');
  const plain = qkvIn(empty, ['train-lm', '--out', join(empty, 'lm3'), '--data', 'nosuch.txt']);
  assert.equal(plain.stderr, 'qkv: corpus file not found: nosuch.txt (or nosuch.txt.gz)\n');
  const dir = qkvIn(empty, ['train', '--out', join(empty, 'run2'), '--data', 'nodata']);
  assert.equal(
    dir.stderr,
    `qkv: corpus file not found: ${join('nodata', 'train.en')} (or ${join('nodata', 'train.en.gz')})\n`,
  );
});

test('qkv generate: the text on stdout ends its line, the statistics are one line of their own on stderr, with a seed only when sampling', () => {
  const gpt = join(root, 'models/gpt-multi30k-char');
  const greedy = qkv(['generate', '--model', gpt, '--prompt', 'A man', '--max-tokens', '12', '--temperature', '0']);
  assert.equal(greedy.status, 0, greedy.stderr);
  assert.ok(greedy.stdout.startsWith('A man') && greedy.stdout.endsWith('\n'), JSON.stringify(greedy.stdout));
  assert.match(greedy.stderr, /^12 tokens in [\d.]+ s \([\d.]+ ms\/token, KV cache\)\n$/);
  const again = qkv([
    'generate',
    '--model',
    gpt,
    '--prompt',
    'A man',
    '--max-tokens',
    '12',
    '--temperature',
    '0',
    '--seed',
    '5',
  ]);
  assert.equal(again.stdout, greedy.stdout, 'greedy: the seed changes nothing');
  assert.doesNotMatch(again.stderr, /seed/);
  const sampled = qkv([
    'generate',
    '--model',
    gpt,
    '--prompt',
    'A man',
    '--max-tokens',
    '12',
    '--temperature',
    '1',
    '--seed',
    '5',
  ]);
  assert.equal(sampled.status, 0, sampled.stderr);
  assert.match(sampled.stderr, /^12 tokens in [\d.]+ s \([\d.]+ ms\/token, KV cache\), seed 5\n$/);
  const random = qkv(['generate', '--model', gpt, '--prompt', 'A man', '--max-tokens', '4']);
  assert.match(random.stderr, /^4 tokens in .*, seed \d+\n$/, 'the default temperature samples: its seed is printed');
});

test('--ensemble and --no-ensemble are refused in either order', () => {
  const model = join(root, 'models/multi30k-en-de');
  for (const args of [
    ['--ensemble', model, '--no-ensemble'],
    ['--no-ensemble', `--ensemble=${model}`],
  ]) {
    const r = qkv(['translate', '--model', model, ...args], 'A dog.\n');
    assert.equal(r.status, 1, r.stderr);
    assert.equal(r.stderr, 'qkv: --ensemble and --no-ensemble both given: pass one\n');
  }
});
