/**
 * `qkv translate --model DIR` and `qkv summarize --model DIR` of a T5 folder: the lines through the folder's
 * task_specific_params tasks give transformers' texts (test/fixtures/hf-seq2seq/rules.json, made by
 * scripts/fixtures/make_hf_seq2seq_rules.py with transformers 5.18), an empty line stays empty, and the flags that do
 * not apply are refused by name.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { summarize } from '../../src/cli/commands/summarize.ts';
import { translate } from '../../src/cli/commands/translate.ts';
import { UserError } from '../../src/cli/files.ts';
import { tempDir } from '../e2e/tiny-model.ts';

const ROOT = fileURLToPath(new URL('../fixtures/hf-seq2seq/', import.meta.url));
const R: {
  sources: string[];
  task_specific_params: Record<string, unknown>;
  pipelines: Record<string, { outputs: { text: string }[] }>;
} = JSON.parse(readFileSync(join(ROOT, 'rules.json'), 'utf8'));

/** The T5 fixture folder copied, its config.json given rules.json's task_specific_params. */
function t5Folder(): string {
  const dir = tempDir('qkv-t5-cli-');
  const from = join(ROOT, 't5/t5');
  for (const f of readdirSync(from)) if (f !== 'expected.json') copyFileSync(join(from, f), join(dir, f));
  const config = JSON.parse(readFileSync(join(from, 'config.json'), 'utf8'));
  writeFileSync(join(dir, 'config.json'), JSON.stringify({ ...config, task_specific_params: R.task_specific_params }));
  return dir;
}

test('qkv translate and qkv summarize of a T5 folder: transformers’ texts, an empty line stays empty', async () => {
  const model = t5Folder();
  const dir = tempDir('qkv-t5-cli-io-');
  const input = join(dir, 'in.txt');
  const lines = [R.sources[0], '', ...R.sources.slice(1)];
  writeFileSync(input, `${lines.join('\n')}\n`);
  const output = join(dir, 'out.txt');
  const want = (task: string) => {
    const texts = R.pipelines[task].outputs.map((o) => o.text);
    return [texts[0], '', ...texts.slice(1, R.sources.length)].map((t) => `${t}\n`).join('');
  };
  // No --task: the folder's first translation_* task (translation_en_to_de), as transformers 4's 'translation' took it.
  await translate({ model, input, output, log: () => {} });
  assert.equal(readFileSync(output, 'utf8'), want('translation_en_to_de'));
  await translate({ model, input, output, task: 'translation_en_to_fr', log: () => {} });
  assert.equal(readFileSync(output, 'utf8'), want('translation_en_to_fr'));
  await summarize({ model, input, output, log: () => {} });
  assert.equal(readFileSync(output, 'utf8'), want('summarization'));

  await assert.rejects(translate({ model, input, output, alpha: 1, log: () => {} }), (e: Error) => {
    assert.ok(e instanceof UserError);
    return /--alpha is not available for a T5 folder/.test(e.message);
  });
  await assert.rejects(
    translate({ model, input, output, task: 'summarization', log: () => {} }),
    /--task must be a translation task, translation_XX_to_YY \(.* names translation_en_to_de, translation_en_to_fr\), got 'summarization'/,
  );
  await assert.rejects(
    translate({ model: join(ROOT, 't5/t5'), input, output, log: () => {} }),
    /names no translation task: pass --task translation_XX_to_YY/,
  );
  await assert.rejects(
    translate({ model: join(ROOT, 'marian'), input, output, task: 'translation_en_to_de', log: () => {} }),
    /--task chooses a T5 folder's task; .*marian is not a T5 folder/,
  );
  await assert.rejects(
    summarize({ model: join(ROOT, 'marian'), input, output, log: () => {} }),
    /marian\/config\.json describes a Hugging Face Marian translation model; 'summarize' takes a Hugging Face T5/,
  );
});
