/**
 * A Hugging Face folder does what transformers does with it by default (issue 64): GPT-2 folders with GPT-2's real
 * vocabulary and merges, written by transformers 5 itself (`save_pretrained`, then edited as the Hub's folders
 * differ: slow tokenizer files, generation settings, add_bos_token, a template with BOS), and for each folder and
 * prompt what transformers' tokenizer gives and what `model.generate()` continues with no options.
 *
 * The references are made fresh by the real transformers in the reference environment (scripts/ref-env.sh):
 * scripts/fixtures/make_hf_gpt2_defaults.py writes the folders and expected.json into a temporary folder.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { generateText } from '../../src/cli/commands/generate.ts';
import { info } from '../../src/cli/commands/info.ts';
import { pipeline } from '../../src/pipelines/index.ts';
import { ByteLevelBpeTokenizer } from '../../src/text/bytelevel.ts';
import { tempDir } from '../e2e/tiny-model.ts';
import { REF_PYTHON, requireTool, toolSkip } from '../helpers/tools.ts';

interface Run {
  prompt: string;
  ids: number[];
  ids_without_special: number[];
  new_ids: number[];
  text: string;
}
const skip = toolSkip('transformers');
const root = fileURLToPath(new URL('../../', import.meta.url));

let made: { dir: string; expected: { folders: Record<string, { runs: Run[] }> } } | undefined;
/** The folders and transformers' outputs, made once per process. */
function fixtures(): NonNullable<typeof made> {
  if (made) return made;
  requireTool('transformers');
  const dir = tempDir('qkv-hf-defaults-');
  const r = spawnSync(REF_PYTHON, [join(root, 'scripts/fixtures/make_hf_gpt2_defaults.py'), dir], {
    encoding: 'utf8',
    cwd: root,
  });
  assert.equal(r.status, 0, `make_hf_gpt2_defaults.py failed:\n${r.stderr}`);
  made = { dir, expected: JSON.parse(readFileSync(join(dir, 'expected.json'), 'utf8')) };
  return made;
}

const FOLDERS = ['saved', 'slow', 'settings', 'max-length', 'bos', 'slow-bos', 'template'];

for (const name of FOLDERS) {
  test(`${name}: the tokenizer's ids and generate()'s continuation with no options, for 5 prompts`, {
    skip,
  }, async () => {
    const { dir, expected } = fixtures();
    const generate = await pipeline('text-generation', join(dir, name));
    assert.ok(generate.tokenizer instanceof ByteLevelBpeTokenizer);
    const runs = expected.folders[name].runs;
    assert.equal(runs.length, 5);
    for (const r of runs) {
      const what = `${name}, ${JSON.stringify(r.prompt)}`;
      assert.deepEqual(generate.tokenizer.encodeText(r.prompt).ids, r.ids, `ids with special tokens, ${what}`);
      assert.deepEqual(generate.tokenizer.encode(r.prompt), r.ids_without_special, `ids without, ${what}`);
      const ids: number[] = [];
      const text = await generate(r.prompt, { onToken: (_, id) => ids.push(id) });
      assert.deepEqual(ids, r.new_ids, `generated ids, ${what}`);
      assert.equal(text, r.text, `text, ${what}`);
    }
  });
}

test('the folders differ where their settings do (each case tests something)', { skip }, () => {
  const f = fixtures().expected.folders;
  const first = (n: string) => f[n].runs[0];
  assert.deepEqual(first('slow').new_ids, first('saved').new_ids);
  assert.equal(first('saved').new_ids.length, 20); // generate()'s 20 new tokens
  assert.equal(first('max-length').new_ids.length, 14 - first('max-length').ids.length);
  assert.equal(first('slow-bos').ids[0], 50256); // add_bos_token read without tokenizer.json
  assert.notEqual(first('bos').ids[0], 50256); // and dropped beside it, as transformers 5 does
  assert.equal(first('template').ids[0], 50256);
  assert.notDeepEqual(first('settings').new_ids, first('saved').new_ids.slice(0, 12));
  // An EOS of the settings folder (15359) ends some continuation early, after min_new_tokens 5.
  const ended = f.settings.runs.filter((r) => r.new_ids.length < 12);
  assert.ok(ended.length > 0 && ended.every((r) => r.new_ids.at(-1) === 15359 && r.new_ids.length > 5));
});

test('qkv generate: the same continuation as generate(), the options a user passes over the folder', {
  skip,
}, async () => {
  const { dir, expected } = fixtures();
  const r = expected.folders.settings.runs[1];
  let out = '';
  await generateText({
    model: join(dir, 'settings'),
    prompt: r.prompt,
    cache: true,
    log: () => {},
    write: (s) => (out += s),
  });
  assert.equal(out, `${r.prompt}${r.text}\n`);
  // A user's option wins: 3 tokens, repetition penalty off: the first 3 of the folder without its settings.
  out = '';
  const saved = expected.folders.saved.runs[1];
  const generate = await pipeline('text-generation', join(dir, 'settings'));
  const ids: number[] = [];
  await generate(saved.prompt, { maxNewTokens: 3, repetitionPenalty: 1, onToken: (_, id) => ids.push(id) });
  assert.deepEqual(ids, saved.new_ids.slice(0, 3));
});

test('qkv info prints what the folder sets and the defaults applied', { skip }, () => {
  const { dir } = fixtures();
  let json = '';
  const write = process.stdout.write;
  process.stdout.write = ((s: string) => {
    json += s;
    return true;
  }) as typeof process.stdout.write;
  try {
    info({ model: join(dir, 'settings'), log: () => {} });
  } finally {
    process.stdout.write = write;
  }
  const o = JSON.parse(json) as {
    generation: { file: string; set: Record<string, unknown>; defaults: Record<string, unknown> };
    specialTokens: { postProcessor: string; aroundPrompt: string[] };
  };
  assert.equal(o.generation.file, 'generation_config.json');
  assert.deepEqual(o.generation.set.eos_token_id, [15359, 50256]);
  assert.equal(o.generation.defaults.doSample, false);
  assert.equal(o.generation.defaults.repetitionPenalty, 1.3);
  assert.deepEqual(o.specialTokens, { postProcessor: 'TemplateProcessing', aroundPrompt: [] });
});
