/**
 * `pipeline(task, folder, { dtype: 'q8' | 'q4' })` (issue 50, point 2): a float folder quantized at load
 * computes what module.quantize computes; `qkv export --dtype q4` writes the q4 model as it is held (packed
 * bytes U8 with their scales) and that folder loads back bit for bit, runs as stored, and gives the same
 * outputs, from a path and from its files' contents (the explorer's door, openFolder); `qkv generate --dtype` is
 * the pipeline option; the combinations not supported are refused in one line. The shipped folders are fp16 on disk, so an export (the rest in fp16) loses nothing beyond the
 * quantization itself and the comparisons are exact.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { after, test } from 'node:test';
import { exportModel } from '../../src/cli/commands/export.ts';
import { generateText } from '../../src/cli/commands/generate.ts';
import { readEnsemble, readLm } from '../../src/folder/node.ts';
import { pipeline } from '../../src/index.ts';
import { readSafetensors } from '../../src/io/safetensors.ts';
import { textGenerationPipeline } from '../../src/pipelines/text-generation.ts';
import { translationPipeline } from '../../src/pipelines/translation.ts';
import { root } from '../helpers/cli.ts';

const GPT = join(root, 'models/gpt-multi30k-char');
const EN_DE = join(root, 'models/multi30k-en-de');
const work = mkdtempSync(join(tmpdir(), 'qkv-dtype-'));
after(() => rmSync(work, { recursive: true, force: true }));
const quiet = { log: () => {} };
const GPT_Q4 = join(work, 'gpt-q4');
exportModel({ model: GPT, out: GPT_Q4, dtype: 'q4', ...quiet });

const SENTENCES = ['A man rides a bike down a dirt road.', 'Two dogs play in the snow.', 'A girl in a red dress.'];

test('qkv export --dtype q4: packed bytes (U8) with their scales, int8 tables, fp16 rest, and the layout said', () => {
  const file = readSafetensors(readFileSync(join(GPT_Q4, 'model.safetensors')));
  assert.equal(file.dtypes['h.0.mlp.c_fc.weight'], 'U8');
  assert.deepEqual(file.tensors['h.0.mlp.c_fc.weight']!.shape, [512, 64], 'c_fc (512, 128) as 64 bytes a row');
  assert.equal(file.dtypes['h.0.mlp.c_fc.weight_scale'], 'F16', 'a float16 scale per block: 4.5 bits a weight');
  assert.deepEqual(file.tensors['h.0.mlp.c_fc.weight_scale']!.shape, [512, 4]);
  assert.equal(file.dtypes['h.0.attn.in_proj_weight'], 'U8');
  assert.equal(file.dtypes['wte.weight'], 'I8');
  assert.deepEqual(file.tensors['wte.weight_scale']!.shape, [82, 1]);
  assert.equal(file.dtypes['ln_f.weight'], 'F16');
  assert.match(file.metadata.quantization!, /q4 packed two a byte \(U8 \[rows, cols\/2\]/);
});

test('a q4 folder loads back bit for bit what module.quantize made, without dequantizing', () => {
  const stored = readLm(GPT_Q4).model.stateDict();
  const made = readLm(GPT).model.quantize({ dtype: 'q4' }).stateDict();
  assert.deepEqual(Object.keys(stored).sort(), Object.keys(made).sort());
  for (const [k, t] of Object.entries(made)) {
    assert.equal(stored[k]!.dtype, t.dtype, k);
    assert.deepEqual(stored[k]!.shape, t.shape, k);
    assert.deepEqual(Array.from(stored[k]!.dataSync()), Array.from(t.dataSync()), k);
  }
  assert.equal(stored['h.3.mlp.c_proj.weight']!.dtype, 'q4');
});

test("text-generation: { dtype: 'q4' } on the float folder = the q4 folder = module.quantize; refusals in one line", async () => {
  const o = { maxNewTokens: 40, temperature: 0 };
  const atLoad = await (await pipeline('text-generation', GPT, { dtype: 'q4' }))('A dog', o);
  const stored = await (await pipeline('text-generation', GPT_Q4))('A dog', o);
  const lm = readLm(GPT);
  lm.model.quantize({ dtype: 'q4' });
  const manual = await textGenerationPipeline(lm)('A dog', o);
  const float = await (await pipeline('text-generation', GPT))('A dog', o);
  assert.equal(atLoad, manual);
  assert.equal(stored, manual);
  assert.notEqual(float, '');
  assert.equal((await pipeline('text-generation', GPT_Q4, { dtype: 'q4' })).model.wte.weight.dtype, 'int8');

  await assert.rejects(
    pipeline('text-generation', GPT_Q4, { dtype: 'q8' }),
    /^Error: pipeline\('text-generation'\): dtype 'q8': the folder holds q4 weights, which run as stored/,
  );
  await assert.rejects(pipeline('text-generation', GPT_Q4, { dtype: 'fp32' }), /dtype 'fp32': the folder holds q4/);
  await assert.rejects(
    // biome-ignore lint/suspicious/noExplicitAny: a value of the wrong kind, as plain JavaScript passes it
    pipeline('text-generation', GPT, { dtype: 'q5' as any }),
    /pipeline\('text-generation'\): dtype: expected 'fp32', 'q8' \(or 'int8'\) or 'q4', got string 'q5'/,
  );

  // qkv generate --dtype q4: the same text as the pipeline option.
  let cli = '';
  await generateText({
    model: GPT,
    prompt: 'A dog',
    maxTokens: 40,
    temperature: 0,
    cache: true,
    dtype: 'q4',
    log: () => {},
    write: (s) => (cli += s),
  });
  assert.equal(cli, `A dog${manual}\n`);
});

test("translation: { dtype: 'q8' } on the float ensemble = module.quantize int8 = its int8 export, member by member", async () => {
  const translate = await pipeline('translation', EN_DE, { dtype: 'q8' });
  assert.equal(translate.members.length, 2);
  for (const m of translate.members) assert.equal(m.stateDict()['embedding.weight']!.dtype, 'int8');
  const atLoad = await translate(SENTENCES);
  const e = readEnsemble(EN_DE);
  for (const m of e.members) m.quantize({ dtype: 'int8' });
  const manual = await translationPipeline({ kind: 'seq2seq', ...e })(SENTENCES);
  assert.deepEqual(atLoad, manual);
  const i8 = join(work, 'en-de-int8');
  exportModel({ model: EN_DE, out: i8, dtype: 'int8', ...quiet });
  assert.deepEqual(await (await pipeline('translation', i8))(SENTENCES), manual);
  const float = await (await pipeline('translation', EN_DE))(SENTENCES);
  assert.equal(float.length, 3);

  // The explorer's door: the folder's files as contents (openFolder, no Node API), members in subfolders.
  const contents = new Map<string, Uint8Array>();
  for (const f of readdirSync(i8, { recursive: true, withFileTypes: true }))
    if (f.isFile()) {
      const path = join(f.parentPath, f.name);
      contents.set(relative(i8, path), readFileSync(path));
    }
  const opened = await pipeline('translation', contents);
  assert.equal(opened.members.length, 2);
  assert.equal(opened.members[1]!.stateDict()['transformer.decoder.layers.0.linear1.weight']!.dtype, 'int8');
  assert.deepEqual(await opened(SENTENCES), manual);
});
