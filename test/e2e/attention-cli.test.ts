/** `qkv attention`: heatmaps of a translation (or of a language model's continuation) as SVG, in Node. */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { attention } from '../../src/cli/commands/attention.ts';
import { translateWithAttention } from '../../src/viz/attention-data.ts';
import { generateWithAttention, lineSeparatorId } from '../../src/viz/gpt-attention.ts';
import { GPT_HEADS, GPT_LAYERS, HEADS, LAYERS, makeTinyGpt, makeTinyModel, tempDir } from './tiny-model.ts';

const { dir, model, tokenizer } = makeTinyModel();
const out = tempDir('qkv-attn-');
const SENTENCE = 'A dog runs in the park.';
const count = (s: string, re: RegExp) => (s.match(re) ?? []).length;
const quiet = () => {};

test('one head: cells = query tokens × key tokens, for each kind', () => {
  const t = translateWithAttention(model, tokenizer, SENTENCE);
  const S = t.srcTokens.length;
  const T = t.tgtTokens.length;
  for (const [kind, rows, cols] of [
    ['enc', S, S],
    ['dec', T, T],
    ['cross', T, S],
  ] as const) {
    const file = join(out, `${kind}.svg`);
    const logs: string[] = [];
    attention({
      sentence: SENTENCE,
      model: dir,
      out: file,
      kind,
      layer: 2,
      head: 1,
      beam: 1,
      alpha: 0.6,
      log: (l) => logs.push(l),
    });
    const svg = readFileSync(file, 'utf8');
    assert.ok(svg.startsWith('<?xml'));
    assert.equal(count(svg, /<rect class="cell/g), rows * cols, kind);
    assert.match(svg, /layer 2 · head 1/);
    assert.ok(logs.some((l) => l.startsWith(`wrote ${file}`)));
  }
});

test('all heads of all layers, or of one layer; HTML output', () => {
  const all = join(out, 'all.svg');
  attention({ sentence: SENTENCE, model: dir, out: all, kind: 'cross', beam: 1, alpha: 0.6, log: quiet });
  assert.equal(count(readFileSync(all, 'utf8'), /class="qkv-heatmap/g), LAYERS * HEADS);
  const one = join(out, 'layer1.svg');
  attention({ sentence: SENTENCE, model: dir, out: one, kind: 'enc', layer: 1, beam: 2, alpha: 0.6, log: quiet });
  assert.equal(count(readFileSync(one, 'utf8'), /class="qkv-heatmap/g), HEADS);
  const html = join(out, 'page.html');
  attention({ sentence: SENTENCE, model: dir, out: html, kind: 'dec', beam: 1, alpha: 0.6, log: quiet });
  assert.match(readFileSync(html, 'utf8'), /^<!doctype html>[\s\S]*<svg/);
});

test('clear errors', () => {
  const o = { sentence: SENTENCE, model: dir, out: join(out, 'x.svg'), kind: 'cross', beam: 1, alpha: 0.6, log: quiet };
  assert.throws(
    () => attention({ ...o, layer: 3 }),
    /--layer 3 does not exist: the decoder → encoder cross-attention has layers 1..2/,
  );
  assert.throws(() => attention({ ...o, head: 9 }), /--head 9 does not exist: this model has heads 1..2/);
  assert.throws(() => attention({ ...o, kind: 'self' }), /--kind must be enc, dec or cross, got 'self'/);
  assert.throws(() => attention({ ...o, out: join(out, 'x.png') }), /--out must end in .svg or .html/);
  assert.throws(() => attention({ ...o, model: join(out, 'nope') }), /model folder not found/);
});

test('the command line', () => {
  const file = join(out, 'cli.svg');
  const r = spawnSync(
    process.execPath,
    [
      '--import',
      'tsx',
      'src/cli/main.ts',
      'attention',
      '--model',
      dir,
      SENTENCE,
      '--out',
      file,
      '--kind',
      'cross',
      '--layer',
      '1',
      '--head',
      '2',
    ],
    { encoding: 'utf8' },
  );
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stderr, /wrote .*cli\.svg: decoder → encoder cross-attention, layer 1, head 2/);
  assert.equal(r.stdout.trim(), translateWithAttention(model, tokenizer, SENTENCE).translation.trim());
  assert.match(readFileSync(file, 'utf8'), /class="qkv-heatmap qkv-attention"/);
  const bad = spawnSync(
    process.execPath,
    ['--import', 'tsx', 'src/cli/main.ts', 'attention', '--model', dir, SENTENCE, '--out', file, '--layer', '0'],
    { encoding: 'utf8' },
  );
  assert.equal(bad.status, 1);
  assert.match(bad.stderr, /--layer must be a positive integer, got '0'/);
});

test('a language model: the prompt is continued and its causal self-attention drawn (upper triangle masked)', () => {
  const gpt = makeTinyGpt();
  const g = generateWithAttention(
    { model: gpt.model, tokenizer: gpt.tokenizer, separatorId: lineSeparatorId(gpt.tokenizer) },
    'a dog',
    { maxTokens: 6 },
  );
  const n = g.ids.length;
  const file = join(out, 'gpt.svg');
  const logs: string[] = [];
  attention({
    sentence: 'a dog',
    model: gpt.dir,
    out: file,
    kind: 'cross',
    layer: 2,
    head: 1,
    beam: 1,
    alpha: 0.6,
    maxTokens: 6,
    log: (l) => logs.push(l),
  });
  const svg = readFileSync(file, 'utf8');
  assert.equal(count(svg, /<rect class="cell/g), n * n);
  assert.equal(
    count(svg, /<rect class="cell masked"/g),
    (n * (n - 1)) / 2,
    'every cell above the diagonal, and only those, is masked',
  );
  for (const m of svg.matchAll(/<rect class="cell masked" data-row="(\d+)" data-col="(\d+)"/g))
    assert.ok(Number(m[2]) > Number(m[1]));
  assert.match(svg, /causal self-attention/);
  assert.ok(
    logs.some((l) => l === `"a dog" → "${g.continuation}"`),
    logs.join('\n'),
  );
  const all = join(out, 'gpt-all.svg');
  attention({
    sentence: 'a dog',
    model: gpt.dir,
    out: all,
    kind: 'cross',
    beam: 1,
    alpha: 0.6,
    maxTokens: 6,
    log: quiet,
  });
  assert.equal(count(readFileSync(all, 'utf8'), /class="qkv-heatmap/g), GPT_LAYERS * GPT_HEADS);
  assert.throws(
    () =>
      attention({
        sentence: 'a dog',
        model: gpt.dir,
        out: file,
        kind: 'cross',
        layer: 9,
        beam: 1,
        alpha: 0.6,
        log: quiet,
      }),
    /--layer 9 does not exist: this model has layers 1..2/,
  );
});
