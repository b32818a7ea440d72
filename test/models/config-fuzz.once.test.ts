/**
 * Fuzzing config.json (issue 13, item 5): thousands of mutated configs of each format (qkv-seq2seq,
 * qkv-gpt), loaded as the explorer page loads a model folder and as the CLI does, each end in a
 * loaded model or one clear error naming the file: no crash of another kind, no hang, and no huge
 * allocation (a config describing a model past 2^29 floats is refused before anything is built).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadLmShape, loadModelShape } from '../../src/cli/files.ts';
import { checkGptConfig, checkSeq2SeqConfig, MAX_MODEL_FLOATS } from '../../src/models/config-check.ts';
import { loadGptFromFiles } from '../../src/viz/gpt-attention.ts';
import { loadModelFromFiles } from '../../src/viz/attention-data.ts';
import { makeTinyGpt, makeTinyModel } from '../e2e/tiny-model.ts';
import { fuzz } from '../helpers/mutate.ts';

export const FUZZ_INPUTS = 3000;
const CLI_INPUTS = 1000;

const read = (dir: string) => ({
  config: JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')),
  tokenizer: JSON.parse(readFileSync(join(dir, 'tokenizer.json'), 'utf8')),
  weights: readFileSync(join(dir, 'model.safetensors')),
});
const seq = makeTinyModel();
const gpt = makeTinyGpt();
const s = read(seq.dir);
const g = read(gpt.dir);
const PAGE_ERROR =
  /^(config\.json|tokenizer\.json|model\.safetensors|BpeTokenizer\.fromJSON|CharTokenizer\.fromJSON)[: ]/;

/**
 * The work of a load is bounded by its input, not by a clock: a model the page builds from a
 * config holds no more floats than its weights file (4 bytes each) carries, so a config that
 * describes a larger model is refused before anything that size is allocated.
 */
function boundedBy(model: { numParameters(): number }, weights: Uint8Array): void {
  assert.ok(
    model.numParameters() <= weights.length / 4,
    `a model of ${model.numParameters()} floats was built from ${weights.length} bytes of weights`,
  );
}

function parsed(input: unknown): unknown {
  if (typeof input !== 'string') return input;
  try {
    return JSON.parse(input);
  } catch (e) {
    throw new Error(`config.json: not valid JSON (${(e as Error).message})`); // what the page's fetch().json() reports
  }
}

test(`the page's loader on ${FUZZ_INPUTS} mutated qkv-seq2seq config.json files: a model or a clear error`, () => {
  const r = fuzz(
    FUZZ_INPUTS,
    303,
    s.config,
    (input) => boundedBy(loadModelFromFiles(parsed(input), s.tokenizer, s.weights).model, s.weights),
    PAGE_ERROR,
  );
  assert.ok(r.ok > 100 && r.errors > 1000, `${r.ok} loaded, ${r.errors} refused`);
  process.stderr.write(
    `# ${r.ok} loaded, ${r.errors} refused with a clear error, slowest ${r.slowestMs.toFixed(0)} ms\n`,
  );
});

test(`the page's loader on ${FUZZ_INPUTS} mutated qkv-gpt config.json files: a model or a clear error`, () => {
  const r = fuzz(
    FUZZ_INPUTS,
    404,
    g.config,
    (input) => boundedBy(loadGptFromFiles(parsed(input), g.tokenizer, g.weights).model, g.weights),
    PAGE_ERROR,
  );
  assert.ok(r.ok > 100 && r.errors > 1000, `${r.ok} loaded, ${r.errors} refused`);
  process.stderr.write(
    `# ${r.ok} loaded, ${r.errors} refused with a clear error, slowest ${r.slowestMs.toFixed(0)} ms\n`,
  );
});

test(`the CLI's loaders on ${CLI_INPUTS} mutated config.json files of each format: a model or one clear line naming the file`, () => {
  for (const [dir, doc, load, seed] of [
    [seq.dir, s.config, loadModelShape, 505],
    [gpt.dir, g.config, loadLmShape, 606],
  ] as const) {
    const path = join(dir, 'config.json');
    const file = new RegExp(`^${dir.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}(/config\\.json|/tokenizer\\.json)?: `);
    const r = fuzz(
      CLI_INPUTS,
      seed,
      doc,
      (input) => {
        writeFileSync(path, typeof input === 'string' ? input : JSON.stringify(input));
        const { model } = load(dir);
        // No weights are read here: the size check (config-check.ts) is the bound.
        assert.ok(model.numParameters() <= MAX_MODEL_FLOATS, `a model of ${model.numParameters()} floats was built`);
      },
      new RegExp(`${file.source}|^model config is not valid JSON: `),
    );
    assert.ok(r.ok > 20 && r.errors > 300, `${r.ok} loaded, ${r.errors} refused`);
    process.stderr.write(
      `# ${r.ok} loaded, ${r.errors} refused with a clear error, slowest ${r.slowestMs.toFixed(0)} ms\n`,
    );
  }
});

test('sizes: a config past 2^29 floats is refused before allocation; one just under it is not', () => {
  const base = seq.model.config;
  assert.throws(
    () => checkSeq2SeqConfig({ ...base, dModel: 65536, nhead: 2 }),
    /^Error: model describes a model of [\d.]+e\+\d+ floats; qkv holds at most 536,870,912 \(2 GiB\)$/,
  );
  assert.throws(() => checkSeq2SeqConfig({ ...base, maxLen: 2 ** 31 - 1 }), /floats; qkv holds at most/);
  assert.throws(() => checkGptConfig({ ...gpt.model.config, vocabSize: 2 ** 30 }), /floats; qkv holds at most/);
  assert.equal(
    checkSeq2SeqConfig({ ...base, maxLen: Math.floor(MAX_MODEL_FLOATS / base.dModel) - 10_000 }).dModel,
    base.dModel,
  );
  assert.throws(
    () => checkSeq2SeqConfig({ ...base, dModel: 10, nhead: 4 }),
    /^Error: model\.dModel 10 is not divisible by nhead 4$/,
  );
  assert.throws(
    () => checkSeq2SeqConfig({ ...base, dropout: 1 }),
    /^Error: model\.dropout must be a number in \[0, 1\), got 1$/,
  );
  assert.throws(
    () => checkGptConfig({ ...gpt.model.config, positions: 'rope' }),
    /^Error: model\.positions must be one of "learned", "sinusoidal", got "rope"$/,
  );
  assert.throws(
    () => checkSeq2SeqConfig({ ...base, padId: base.vocabSize }),
    /padId 120 is outside the vocabulary of 120/,
  );
});
