/**
 * pipeline('text-generation') continues a prompt exactly as `qkv generate` does with the same flags
 * (the shipped char GPT and the PyTorch-written Hugging Face GPT-2 fixture; the CLI's handler
 * writes into a string), streamed or not; pipeline('translation') on strings, arrays and empty
 * inputs; a folder of the other kind is refused by name.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { generateText } from '../../src/cli/commands/generate.ts';
import { pipeline } from '../../src/index.ts';
import { root } from '../helpers/cli.ts';

const GPT = join(root, 'models/gpt-multi30k-char');
const HF = join(root, 'test/fixtures/hf-gpt2-tiny');
const EN_DE = join(root, 'models/multi30k-en-de');

/** What `qkv generate` writes on stdout for these flags. */
async function cliText(
  model: string,
  prompt: string,
  f: { maxTokens: number; temperature: number; topK?: number; topP?: number; seed: number },
): Promise<string> {
  let out = '';
  await generateText({ model, prompt, cache: true, log: () => {}, write: (s) => (out += s), ...f });
  return out;
}

const CASES = [
  { model: GPT, prompt: 'A dog', maxTokens: 60, temperature: 0.8, seed: 1 },
  { model: GPT, prompt: 'Two men\nA woman in a red', maxTokens: 50, temperature: 1.2, topK: 5, seed: 7 },
  { model: GPT, prompt: 'A child', maxTokens: 40, temperature: 0, seed: 0 },
  { model: HF, prompt: 'A man is riding', maxTokens: 12, temperature: 0.9, topP: 0.9, seed: 3 },
  { model: HF, prompt: 'The dog\nruns', maxTokens: 8, temperature: 0, seed: 0 },
];

for (const c of CASES) {
  test(`generate equals qkv generate: ${c.model === GPT ? 'qkv char GPT' : 'HF GPT-2'}, ${JSON.stringify(c.prompt)}, T ${c.temperature}`, async () => {
    const { model, prompt, maxTokens, ...rest } = c;
    const expected = await cliText(model, prompt, { maxTokens, ...rest });
    const generate = await pipeline('text-generation', model);
    const opts = { maxNewTokens: maxTokens, ...rest };
    const pieces: string[] = [];
    const ids: number[] = [];
    const text = await generate(prompt, {
      ...opts,
      onToken: (p, id) => {
        pieces.push(p);
        ids.push(id);
      },
    });
    // The CLI writes the prompt (each of these reads back as itself), the continuation, and a final line end.
    assert.ok(text.length > 0);
    assert.equal(`${prompt}${text}${text.endsWith('\n') ? '' : '\n'}`, expected);
    assert.equal(ids.length, maxTokens, 'one onToken call per token');
    assert.equal(pieces.join(''), text);
    let streamed = '';
    for await (const piece of generate.stream(prompt, opts)) streamed += piece;
    assert.equal(streamed, text);
  });
}

test('the char GPT: the continuation follows the prompt read back, the pipeline exposes its parts', async () => {
  const generate = await pipeline('text-generation', GPT);
  assert.equal(generate.task, 'text-generation');
  assert.equal(generate.config.format, 'qkv-gpt');
  assert.equal(generate.tokenizer.vocabSize, generate.model.config.vocabSize);
  const expected = await cliText(GPT, 'A dog', { maxTokens: 30, temperature: 0.8, seed: 5 });
  assert.equal(
    `A dog${await generate('A dog', { maxNewTokens: 30, seed: 5 })}\n`,
    expected.endsWith('\n') ? expected : `${expected}\n`,
  );
  await assert.rejects(generate(''), /text-generation: the prompt is empty/);
  await assert.rejects(generate('A dog', { topP: 2 }), /topP: expected a number in \(0, 1\], got number 2/);
});

test('translation: a string gives a string, an array an array in order, empty input an empty string', async () => {
  const translate = await pipeline('translation', EN_DE);
  assert.equal(translate.task, 'translation');
  assert.equal(translate.members.length, 2, "config.json's ensemble member is loaded");
  const one = await translate('A man rides a bike.', { beam: 1 });
  assert.equal(typeof one, 'string');
  assert.ok(one.length > 0);
  const many = await translate(['', 'A man rides a bike.', ''], { beam: 1 });
  assert.deepEqual(many, ['', one, '']);
  assert.equal(await translate(''), '');
  assert.deepEqual(await translate([]), []);
  await assert.rejects(
    translate('A dog.', { beam: 1, mbr: true }),
    /mbr chooses among beam search's hypotheses: it needs beam 2 or more, got beam 1/,
  );
  await assert.rejects(
    translate('A dog.', { maxLength: 0 }),
    /translation: maxLength: expected a positive integer, got number 0/,
  );
  // maxLength bounds the output tokens.
  const short = await translate('A man in a blue shirt is riding a bike down a long street.', {
    beam: 1,
    maxLength: 3,
  });
  assert.ok(translate.targetTokenizer.encode(short).length <= 3, short);
});

test('a folder of the other kind is refused by name', async () => {
  await assert.rejects(
    pipeline('translation', GPT),
    /pipeline\('translation'\): .*gpt-multi30k-char\/config\.json describes a qkv language model; 'translation' takes a translation model folder/,
  );
  await assert.rejects(
    pipeline('text-generation', EN_DE),
    /pipeline\('text-generation'\): .*multi30k-en-de\/config\.json describes a translation model/,
  );
  await assert.rejects(
    pipeline('text-generation', join(root, 'no-such-folder')),
    /model folder not found: .*no-such-folder/,
  );
  // @ts-expect-error an unknown task
  await assert.rejects(pipeline('question-answering', GPT), /pipeline: unknown task 'question-answering'/);
});
