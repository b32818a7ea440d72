/**
 * Hugging Face GPT-2 folders in the CLI: `qkv generate / attention / info --model DIR` take the
 * PyTorch-written fixture folder as they take a qkv one; bad folders give one line naming the file.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { tempDir } from '../e2e/tiny-model.ts';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { attention } from '../../src/cli/commands/attention.ts';
import { exportModel } from '../../src/cli/commands/export.ts';
import { loadLmDir, UserError } from '../../src/cli/files.ts';
import { generateText } from '../../src/cli/commands/generate.ts';
import { folderKindOf } from '../../src/folder/node.ts';
import { io } from '../../src/index.ts';
import { argmax } from '../../src/decode/sample.ts';
import { ByteLevelBpeTokenizer } from '../../src/text/index.ts';

const FIX = fileURLToPath(new URL('../fixtures/hf-gpt2-tiny/', import.meta.url));
const expected = io.readSafetensors(new Uint8Array(readFileSync(join(FIX, 'expected.safetensors')))).tensors;
const quiet = () => {};

/** A copy of the fixture folder with one file replaced. */
function variant(name: string, contents: string | Uint8Array): string {
  const dir = tempDir('qkv-hf-');
  for (const f of ['config.json', 'tokenizer.json', 'model.safetensors']) copyFileSync(join(FIX, f), join(dir, f));
  writeFileSync(join(dir, name), contents);
  return dir;
}

test("qkv generate: a Hugging Face folder continues a prompt; greedy starts with the argmax of PyTorch's logits", async () => {
  assert.equal(folderKindOf(FIX), 'hf-gpt2');
  const lm = loadLmDir(FIX);
  assert.ok(lm.tokenizer instanceof ByteLevelBpeTokenizer);
  assert.equal(lm.separatorId, 316);
  let text = '';
  // The fixture's logits are for <|endoftext|> and the prompt's ids; a Hugging Face folder adds no BOS itself
  // (GPT-2's tokenizer has none, as transformers), so the prompt writes it, as a transformers user would.
  await generateText({
    model: FIX,
    prompt: '<|endoftext|>A man is riding a bike',
    maxTokens: 1,
    temperature: 0,
    cache: true,
    log: quiet,
    write: (s) => {
      text += s;
    },
  });
  const [, T, V] = expected.logits.shape;
  const last = expected.logits.dataSync<Float32Array>().subarray((T - 1) * V, T * V);
  assert.equal(text, `A man is riding a bike${lm.tokenizer.decode([argmax(last)])}\n`);
  // A prompt with a line break is raw text for a byte-level model: '\n' is a token, not the separator.
  let two = '';
  await generateText({
    model: FIX,
    prompt: 'A dog\nA man',
    maxTokens: 3,
    temperature: 0.8,
    seed: 1,
    cache: true,
    log: quiet,
    write: (s) => {
      two += s;
    },
  });
  assert.ok(two.startsWith('A dog\nA man'), JSON.stringify(two));
});

test('qkv attention and qkv info read the folder; qkv export refuses it', () => {
  const out = join(tempDir('qkv-hf-'), 'a.svg');
  const logs: string[] = [];
  attention({
    sentence: 'A man is',
    model: FIX,
    out,
    kind: 'enc',
    layer: 2,
    head: 3,
    beam: 1,
    alpha: 0.6,
    maxTokens: 4,
    log: (l) => logs.push(l),
  });
  const svg = readFileSync(out, 'utf8');
  assert.match(svg, /layer 2 · head 3/);
  assert.ok(logs.some((l) => l.startsWith(`wrote ${out}`)));
  assert.throws(
    () => exportModel({ model: FIX, out: join(tmpdir(), 'x'), dtype: 'f16', log: quiet }),
    (e: Error) => e instanceof UserError && /is a Hugging Face folder/.test(e.message),
  );
});

test('bad folders: another model_type, an unsupported tokenizer.json, a truncated model.safetensors', () => {
  const cfg = JSON.parse(readFileSync(join(FIX, 'config.json'), 'utf8')) as Record<string, unknown>;
  const oneLine = (dir: string, re: RegExp) =>
    assert.throws(
      () => loadLmDir(dir),
      (e: Error) => e instanceof UserError && re.test(e.message) && !e.message.includes('\n'),
    );
  oneLine(
    variant('config.json', JSON.stringify({ ...cfg, model_type: 'albert' })),
    /config\.json: Hugging Face model_type 'albert' is not supported \(qkv reads model_type 'gpt2'.*'marian'/,
  );
  oneLine(
    variant('tokenizer.json', JSON.stringify({ model: { type: 'WordPiece', vocab: {} } })),
    /tokenizer\.json: unsupported model type 'WordPiece'/,
  );
  oneLine(
    variant(
      'tokenizer.json',
      '{"model": {"type": "BPE", "vocab": {}, "merges": []}, "pre_tokenizer": {"type": "Whitespace"}}',
    ),
    /tokenizer\.json: unsupported pre_tokenizer 'Whitespace'/,
  );
  const w = readFileSync(join(FIX, 'model.safetensors'));
  oneLine(
    variant('model.safetensors', w.subarray(0, w.length - 4096)),
    /model\.safetensors: safetensors: tensor '.+' has data_offsets .* but the data buffer after the header is only \d+ bytes/,
  );
  oneLine(
    variant('model.safetensors', w.subarray(0, 100)),
    /model\.safetensors: safetensors: header length \d+ bytes is larger than the 92 bytes after the length prefix/,
  );
});
