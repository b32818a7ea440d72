/**
 * `qkv embed`, `qkv fill-mask` and `qkv classify` on the encoder folders of scripts/fixtures/make_hf_encoders.py:
 * texts from arguments or stdin, --json, and the results equal to transformers' (the same numbers the
 * pipelines are held to in test/pipelines/encoders.test.ts).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { readSafetensors } from '../../src/io/safetensors.ts';
import { qkv, root } from '../helpers/cli.ts';

const F = join(root, 'test/fixtures/hf-encoders');
const expected = (name: string) => JSON.parse(readFileSync(join(F, name, 'expected.json'), 'utf8'));

test("qkv embed: the folder's pooled, normalized embeddings, one line per stdin text, or --json", () => {
  const e = expected('bert');
  const want = readSafetensors(
    new Uint8Array(readFileSync(join(F, 'bert', 'expected.safetensors'))),
  ).tensors.meanNormalized.tolist() as number[][];
  const r = qkv(['embed', '--model', join(F, 'bert')], `${e.texts.join('\n')}\n`);
  assert.equal(r.status, 0, r.stderr);
  const lines = r.stdout
    .trimEnd()
    .split('\n')
    .map((l) => l.split(' ').map(Number));
  assert.equal(lines.length, e.texts.length);
  lines.forEach((row, i) => row.forEach((v, k) => assert.ok(Math.abs(v - want[i][k]) < 2e-6, `text ${i} dim ${k}`)));
  const j = qkv(['embed', '--model', join(F, 'bert'), '--pooling', 'cls', '--no-normalize', '--json', e.texts[0]]);
  assert.equal(j.status, 0, j.stderr);
  assert.deepEqual(
    (JSON.parse(j.stdout) as number[][]).map((r) => r.length),
    [16],
  );
});

test("qkv fill-mask and qkv classify: transformers' candidates and labels, --json", () => {
  const m = expected('bert-mlm');
  const r = qkv(['fill-mask', '--model', join(F, 'bert-mlm'), '--json', m.masked[0]]);
  assert.equal(r.status, 0, r.stderr);
  const got = JSON.parse(r.stdout) as { token: number; sequence: string }[][];
  assert.deepEqual(
    got[0].map((c) => [c.token, c.sequence]),
    m.fillMask[0].map((c: { token: number; sequence: string }) => [c.token, c.sequence]),
  );
  const c = expected('roberta-cls');
  const k = qkv(['classify', '--model', join(F, 'roberta-cls')], `${c.texts.join('\n')}\n`);
  assert.equal(k.status, 0, k.stderr);
  assert.deepEqual(
    k.stdout
      .trimEnd()
      .split('\n')
      .map((l) => l.split('\t')[0]),
    c.top1.map((t: { label: string }) => t.label),
  );
  const bad = qkv(['classify', '--model', join(F, 'bert-mlm'), 'a dog']);
  assert.equal(bad.status, 1);
  assert.match(bad.stderr, /^qkv: .*bert-mlm\/model\.safetensors: missing tensor bert\.pooler\.dense\.weight\n$/);
});
