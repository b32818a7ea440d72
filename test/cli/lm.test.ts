/** `qkv train-lm` and `qkv generate` end to end on a tiny corpus, and their errors. */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { nonNegativeInt, nonNegativeNumber, probability } from '../../src/cli/args.ts';
import { trainLm } from '../../src/cli/commands/train-lm.ts';

const root = new URL('../../', import.meta.url).pathname;
const argv = (args: string[]) => ['--import', 'tsx', join(root, 'src/cli/main.ts'), ...args];
interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}
/** Several independent runs at once (each costs ~0.5 s of start-up alone). */
function qkvAll(...runs: string[][]): Promise<Run[]> {
  return Promise.all(
    runs.map(
      (args) =>
        new Promise<Run>((resolve) => {
          // One thread each: the runs are tiny and several share the machine (and see the report on
          // wasm worker start-up under --import tsx).
          const child = spawn(process.execPath, argv(args), { cwd: root, env: { ...process.env, QKV_THREADS: '1' } });
          let stdout = '';
          let stderr = '';
          child.stdout.on('data', (c) => (stdout += c));
          child.stderr.on('data', (c) => (stderr += c));
          child.on('close', (status) => resolve({ status, stdout, stderr }));
        }),
    ),
  );
}

/** Each case: exit status 1 and one line on stderr that matches. */
function assertErrors(results: Run[], cases: [string[], RegExp][]): void {
  results.forEach((r, i) => {
    const [args, re] = cases[i];
    assert.equal(r.status, 1, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, re);
    assert.equal(
      r.stderr
        .trim()
        .split('\n')
        .filter((l) => !l.startsWith('(run with --help')).length,
      1,
      `one line: ${r.stderr}`,
    );
  });
}

// 300 English Multi30K captions: 270 to train on, the last 30 held out by train-lm itself.
const work = mkdtempSync(join(tmpdir(), 'qkv-lm-'));
const text = join(work, 'captions.txt');
writeFileSync(
  text,
  `${gunzipSync(readFileSync(join(root, 'data/multi30k/train.en.gz')))
    .toString('utf8')
    .split('\n')
    .slice(0, 300)
    .join('\n')}\n`,
);
const out = join(work, 'char');
const bpe = join(work, 'bpe');
after(() => rmSync(work, { recursive: true, force: true }));

test('qkv train-lm: char and BPE runs write model folders with a progress bar and validation loss', async () => {
  const noModel: [string[], RegExp][] = [
    [['generate', '--model', out, '--prompt', 'A', '--bogus'], /unknown option '--bogus'/],
    [['generate', '--model', join(work, 'nope'), '--prompt', 'A man'], /model folder not found: .*nope/],
    [['generate', '--model', out, '--prompt', ''], /--prompt is empty/],
    [
      ['train-lm', '--out', join(work, 'x'), '--data', text, '--preset', 'huge'],
      /unknown preset 'huge', expected one of: tiny, small/,
    ],
  ];
  const [c, b, ...errors] = await qkvAll(
    [
      'train-lm',
      '--data',
      text,
      '--out',
      out,
      '--preset',
      'tiny',
      '--batch-size',
      '4',
      '--max-steps',
      '6',
      '--eval-every',
      '6',
      '--save-every',
      '3',
    ],
    [
      'train-lm',
      '--data',
      text,
      '--out',
      bpe,
      '--preset',
      'tiny',
      '--tokenizer',
      'bpe',
      '--vocab-size',
      '300',
      '--batch-size',
      '2',
      '--max-steps',
      '3',
    ],
    ...noModel.map(([args]) => args),
  );
  assert.equal(c.status, 0, c.stderr);
  for (const f of ['config.json', 'tokenizer.json', 'model.safetensors', 'train-state.safetensors', 'history.json'])
    assert.ok(existsSync(join(out, f)), f);
  assert.match(c.stderr, /char vocabulary of \d+/);
  assert.match(c.stderr, /step 6: train loss [\d.]+, val loss [\d.]+ \(best, saved\)/);
  assert.match(c.stderr, /train-lm \|/, 'progress bar');
  assert.equal(b.status, 0, b.stderr);
  assert.match(b.stderr, /bpe vocabulary of 300/);
  assert.equal(
    JSON.parse(readFileSync(join(bpe, 'tokenizer.json'), 'utf8')).model.type,
    'BPE',
    'a Hugging Face tokenizer.json',
  );
  assertErrors(errors, noModel);
});

test('qkv train-lm --resume continues the run (10 steps in all); generate continues prompts; errors need a model', async () => {
  const withModel: [string[], RegExp][] = [
    [
      ['generate', '--model', out, '--prompt', 'a'.repeat(80)],
      /the prompt is 80 tokens long; this model's context holds 64/,
    ],
    [['train-lm', '--out', out, '--data', text, '--preset', 'tiny'], /already holds a training run; pass --resume/],
  ];
  const [resumed, g, ...errors] = await qkvAll(
    [
      'train-lm',
      '--data',
      text,
      '--out',
      out,
      '--preset',
      'tiny',
      '--batch-size',
      '4',
      '--max-steps',
      '10',
      '--eval-every',
      '5',
      '--resume',
    ],
    [
      'generate',
      '--model',
      bpe,
      '--prompt',
      'Two dogs',
      '--max-tokens',
      '12',
      '--top-p',
      '0.9',
      '--temperature',
      '1',
      '--seed',
      '1',
    ],
    ...withModel.map(([args]) => args),
  );
  assert.equal(resumed.status, 0, resumed.stderr);
  assert.match(resumed.stderr, /resumed at step 6/);
  const history = JSON.parse(readFileSync(join(out, 'history.json'), 'utf8')) as { step: number; valLoss: number }[];
  assert.deepEqual(
    history.map((h) => h.step),
    [6, 10],
  );
  assert.ok(
    history[1].valLoss < history[0].valLoss,
    `val loss falls: ${history.map((h) => h.valLoss.toFixed(3)).join(' -> ')}`,
  );
  assert.equal(g.status, 0, g.stderr);
  assert.ok(g.stdout.startsWith('Two dogs'), g.stdout);
  assertErrors(errors, withModel);
});

test('qkv generate streams a continuation that the seed determines', async () => {
  const gen = (seed: string) => [
    'generate',
    '--model',
    out,
    '--prompt',
    'A man',
    '--max-tokens',
    '30',
    '--top-k',
    '10',
    '--seed',
    seed,
  ];
  const [a, again, other] = await qkvAll(gen('3'), gen('3'), gen('4'));
  assert.equal(a.status, 0, a.stderr);
  assert.ok(a.stdout.startsWith('A man') && a.stdout.length > 'A man'.length + 10 && a.stdout.endsWith('\n'), a.stdout);
  assert.match(a.stderr, /^30 tokens in [\d.]+ s \([\d.]+ ms\/token, KV cache\), seed 3$/m);
  assert.equal(again.stdout, a.stdout, 'same seed, same text');
  assert.notEqual(other.stdout, a.stdout, 'another seed, another text');
});

test('flag parsers and checks name the flag and the value', async () => {
  assert.throws(() => probability('--top-p')('1.5'), /--top-p must be a number in \(0, 1\], got '1.5'/);
  assert.throws(() => probability('--top-p')('0'), /--top-p must be a number in \(0, 1\], got '0'/);
  assert.throws(() => nonNegativeNumber('--temperature')('-1'), /--temperature must be a number >= 0, got '-1'/);
  assert.equal(nonNegativeNumber('--temperature')('0'), 0);
  assert.throws(() => nonNegativeInt('--seed')('1.5'), /--seed must be an integer >= 0, got '1.5'/);
  await assert.rejects(
    trainLm({ out: join(work, 'z'), tokenizer: 'word', preset: 'tiny', resume: false, evalTokens: 10, log: () => {} }),
    /unknown tokenizer 'word', expected char or bpe/,
  );
  await assert.rejects(
    trainLm({ out: join(work, 'z'), tokenizer: 'char', preset: 'tiny', resume: true, evalTokens: 10, log: () => {} }),
    /--resume: no training state in/,
  );
});

test('qkv export ships a language model: fp16 weights that load and generate, no training state; a bad format is named', async () => {
  const shipped = join(work, 'shipped-lm');
  const weird = join(work, 'weird');
  mkdirSync(weird);
  writeFileSync(join(weird, 'config.json'), JSON.stringify({ format: 'qkv-bert' }));
  const [e, bad] = await qkvAll(
    ['export', '--model', out, '--out', shipped],
    ['export', '--model', weird, '--out', join(work, 'x2')],
  );
  assert.equal(e.status, 0, e.stderr);
  assert.match(e.stderr, /wrote .*shipped-lm \([\d,]+ parameters, F16\)/);
  for (const f of ['config.json', 'tokenizer.json', 'model.safetensors', 'history.json'])
    assert.ok(existsSync(join(shipped, f)), f);
  assert.ok(!existsSync(join(shipped, 'train-state.safetensors')), 'no training state');
  const size = (d: string) => readFileSync(join(d, 'model.safetensors')).length;
  assert.ok(size(shipped) < 0.55 * size(out), `${size(shipped)} vs ${size(out)}`);
  assert.equal(bad.status, 1);
  assert.match(
    bad.stderr,
    /weird\/config\.json: expected format 'qkv-seq2seq' \(a translation model from qkv train\) or 'qkv-gpt' \(a language model from qkv train-lm\), got format 'qkv-bert'/,
  );
  const [g] = await qkvAll([
    'generate',
    '--model',
    shipped,
    '--prompt',
    'A man',
    '--max-tokens',
    '10',
    '--temperature',
    '0',
  ]);
  assert.equal(g.status, 0, g.stderr);
  assert.ok(g.stdout.startsWith('A man'), g.stdout);
});
