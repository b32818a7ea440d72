/**
 * Bad weights through the command line (issue 13, items 2 and 3): NaN in model.safetensors is one
 * line naming the file and tensor, exit 1 (it used to print `<unk>` with exit 0); a config that
 * disagrees with its weights is one line naming the field (it used to print one line per tensor).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readSafetensors, writeSafetensors } from '../../src/io/safetensors.ts';
import { makeTinyGpt, makeTinyModel } from '../e2e/tiny-model.ts';
import { qkv } from '../helpers/cli.ts';

test('qkv translate on weights with NaN in the embedding: one line naming the file and the tensor, exit 1', () => {
  const { dir } = makeTinyModel();
  const wpath = join(dir, 'model.safetensors');
  const t = readSafetensors(readFileSync(wpath)).tensors;
  t['embedding.weight'].dataSync<Float32Array>().fill(Number.NaN, 16 * 5, 16 * 6);
  writeFileSync(wpath, writeSafetensors(t));
  const r = qkv(['translate', '--model', dir, '--beam', '1'], 'A dog runs.\n');
  assert.equal(r.status, 1, r.stderr);
  assert.equal(r.stdout, '');
  assert.equal(
    r.stderr,
    `qkv: ${wpath}: tensor 'embedding.weight' holds NaN at index 80 (row 5) of [120, 16]: the weights are corrupt (a diverged training run or a damaged file)\n`,
  );
});

test('qkv generate with a config.json whose nEmbd disagrees with the weights: one line naming the field', () => {
  const { dir } = makeTinyGpt();
  const cpath = join(dir, 'config.json');
  const c = JSON.parse(readFileSync(cpath, 'utf8'));
  c.model.nEmbd = 32;
  writeFileSync(cpath, JSON.stringify(c));
  const r = qkv(['generate', '--model', dir, '--prompt', 'A dog', '--max-tokens', '3']);
  assert.equal(r.status, 1, r.stderr);
  const lines = r.stderr.trimEnd().split('\n');
  assert.equal(lines.length, 1, r.stderr);
  assert.match(
    lines[0],
    /^qkv: \S+model\.safetensors: the weights do not match config\.json: nEmbd 32 in config\.json, the weights have 16 \(\d+ of \d+ tensors differ in shape \(wte\.weight \[36, 32\] in config\.json, \[36, 16\] in the weights; /,
  );
});
