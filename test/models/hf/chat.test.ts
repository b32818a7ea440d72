/**
 * Chat templates (text/chat-template.ts, the folder's tokenizer) and chat messages through
 * pipeline('text-generation') against transformers 5.18 (scripts/fixtures/make_hf_chat.py): SmolLM2's ChatML from
 * chat_template.jinja (over a decoy in tokenizer_config.json), Qwen2.5's from tokenizer_config.json's string,
 * Llama 3's from its list of named templates; rendered text, ids and tokens of each conversation with and without
 * the generation prompt; the pipeline's generated_text and ids; Mistral's raise_exception.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { readLm } from '../../../src/folder/node.ts';
import { ByteLevelBpeTokenizer } from '../../../src/text/bytelevel.ts';
import { ChatTemplate, type ChatMessage } from '../../../src/text/chat-template.ts';
import { noGrad, pipeline, Tensor } from '../../../src/index.ts';
import { KeptCache, generateStream } from '../../../src/decode/gpt.ts';
import { assertClose } from '../../helpers/assert.ts';

const ROOT = fileURLToPath(new URL('../../fixtures/hf-chat/', import.meta.url));
const FOLDERS = ['smollm2-chatml', 'qwen2.5-chat', 'llama3-chat'];

interface Case {
  messages: ChatMessage[];
  add_generation_prompt: boolean;
  text: string;
  ids: number[];
  tokens: string[];
}
interface Generated {
  messages: ChatMessage[];
  generated_text: ChatMessage[];
  ids: number[];
}
interface Stopped {
  chat: Generated & { stop: string };
  text: { prompt: string; stop: string; ids: number[]; generated: string };
}
interface Expected {
  stopStrings: Stopped;
  cases: Case[];
  pipeline: Generated;
  twoTurns: [Generated, Generated];
}

const expected = (name: string): Expected =>
  JSON.parse(readFileSync(`${ROOT}${name}/expected-chat.json`, 'utf8')) as Expected;

for (const name of FOLDERS) {
  test(`${name}: apply_chat_template's text, ids and tokens as transformers`, () => {
    const loaded = readLm(`${ROOT}${name}`).tokenizer;
    assert.ok(loaded instanceof ByteLevelBpeTokenizer);
    const tokenizer: ByteLevelBpeTokenizer = loaded;
    for (const c of expected(name).cases) {
      const what = `${name}: ${JSON.stringify(c.messages)} (add_generation_prompt ${c.add_generation_prompt})`;
      const o = { addGenerationPrompt: c.add_generation_prompt };
      assert.equal(tokenizer.applyChatTemplate(c.messages, { ...o, tokenize: false }), c.text, what);
      const ids: number[] = tokenizer.applyChatTemplate(c.messages, o);
      assert.deepEqual(ids, c.ids, what);
      assert.deepEqual(
        ids.map((id) => tokenizer.idToToken(id)),
        c.tokens,
        what,
      );
    }
  });
}

test('which template: chat_template.jinja over tokenizer_config.json; the list form by its default', () => {
  const smol = readLm(`${ROOT}smollm2-chatml`).tokenizer as ByteLevelBpeTokenizer;
  assert.equal(smol.chatTemplate?.from, 'chat_template.jinja');
  assert.match(smol.chatTemplate!.source, /SmolLM/);
  const llama = readLm(`${ROOT}llama3-chat`).tokenizer as ByteLevelBpeTokenizer;
  assert.equal(llama.chatTemplate?.from, "tokenizer_config.json's chat_template 'default'");
  assert.equal(llama.chatTemplate?.specialTokens.bos_token, '<|begin_of_text|>');
  assert.throws(
    () => ChatTemplate.fromFolder({ chat_template: [{ name: 'tool_use', template: 'x' }] }),
    /tokenizer_config\.json's chat_template names the templates tool_use, and none 'default'/,
  );
  assert.throws(() => ChatTemplate.fromFolder({ chat_template: 3 }), /must be a template string or a list/);
  assert.equal(ChatTemplate.fromFolder({ bos_token: '<s>' }), null);
});

test("raise_exception: Mistral's template refuses roles that do not alternate, with transformers' message", () => {
  const r = JSON.parse(readFileSync(`${ROOT}raise.json`, 'utf8'));
  const cfg = JSON.parse(readFileSync(`${ROOT}llama3-chat/tokenizer_config.json`, 'utf8'));
  const t = new ChatTemplate(r.template, ChatTemplate.fromFolder(cfg)!.specialTokens);
  assert.equal(t.render(r.good), r.text);
  assert.throws(
    () => t.render(r.bad),
    (e: Error) => e.message === `the chat template: ${r.error}`,
  );
  assert.throws(() => t.render([]), /messages: expected a non-empty array of \{ role, content \}, got an empty array/);
  assert.throws(
    () => t.render([{ role: 'user', content: 3 } as unknown as ChatMessage]),
    /messages\[0\]: expected \{ role: string, content: string \}, got \{"role":"user","content":3\}/,
  );
});

test("pipeline('text-generation') with chat messages: transformers' generated_text and greedy ids", async () => {
  for (const name of FOLDERS) {
    const e = expected(name);
    const generate = await pipeline('text-generation', `${ROOT}${name}`);
    const ids: number[] = [];
    const out = await generate(e.pipeline.messages, { maxNewTokens: 10, onToken: (_, id) => ids.push(id) });
    assert.deepEqual(ids, e.pipeline.ids, `${name}: ids`);
    assert.deepEqual(out, [{ generated_text: e.pipeline.generated_text }], `${name}: generated_text`);
    // A batch of conversations: one result list each, in order.
    const batch = await generate([e.twoTurns[0].messages, e.twoTurns[1].messages], { maxNewTokens: 10 });
    assert.deepEqual(batch, [
      [{ generated_text: e.twoTurns[0].generated_text }],
      [{ generated_text: e.twoTurns[1].generated_text }],
    ]);
    // Streaming: the pieces make the reply.
    let streamed = '';
    for await (const piece of generate.stream(e.pipeline.messages, { maxNewTokens: 10 })) streamed += piece;
    assert.equal(streamed, e.pipeline.generated_text.at(-1)!.content);
  }
});

test("stopStrings: generate()'s stop_strings, on a chat and on a text prompt", async () => {
  for (const name of FOLDERS) {
    const { chat, text } = expected(name).stopStrings;
    const generate = await pipeline('text-generation', `${ROOT}${name}`);
    const ids: number[] = [];
    const out = await generate(chat.messages, {
      maxNewTokens: 10,
      stopStrings: [chat.stop],
      onToken: (_, id) => ids.push(id),
    });
    assert.deepEqual(ids, chat.ids, `${name}: chat ids stopped at ${JSON.stringify(chat.stop)}`);
    assert.deepEqual(out, [{ generated_text: chat.generated_text }]);
    ids.length = 0;
    const got = await generate(text.prompt, {
      maxNewTokens: 10,
      stopStrings: [text.stop],
      onToken: (_, id) => ids.push(id),
    });
    assert.deepEqual(ids, text.ids, `${name}: ids of ${JSON.stringify(text.prompt)} stopped at ${text.stop}`);
    assert.equal(got, text.generated);
  }
  const generate = await pipeline('text-generation', `${ROOT}qwen2.5-chat`);
  await assert.rejects(
    generate('A dog', { stopStrings: 'x' as never }),
    /text-generation: stopStrings: expected an array of non-empty strings, got/,
  );
});

test('a folder without a chat template refuses messages in one line', async () => {
  const generate = await pipeline(
    'text-generation',
    fileURLToPath(new URL('../../fixtures/hf-llama/llama-gqa-tied', import.meta.url)),
  );
  await assert.rejects(
    generate([{ role: 'user', content: 'hi' }]),
    (e: Error) =>
      /^text-generation: this folder has no chat template \(.*\): give a text prompt$/.test(e.message) &&
      !e.message.includes('\n'),
  );
});

test('GPTCache.crop and KeptCache: a prompt departing from the cached ids feeds from the common prefix', () => {
  const { model } = readLm(`${ROOT}qwen2.5-chat`);
  const a = [5, 17, 42, 99, 3, 250, 7, 8, 64, 120, 33, 2];
  const b = [...a.slice(0, 7), 11, 12, 13, 14];
  noGrad(() => {
    const ids = (xs: number[]) => new Tensor(Int32Array.from(xs), [1, xs.length], 'int32');
    const cache = model.initCache();
    model.forwardCached(ids(a), cache);
    cache.crop(7);
    assert.equal(cache.length, 7);
    assert.equal(cache.layers[0].k!.shape[2], 7);
    const cropped = model.forwardCached(ids(b.slice(7)), cache).logits;
    const fresh = model.forward(ids(b));
    const V = model.config.vocabSize;
    assertClose(
      cropped.reshape(4, V),
      fresh
        .reshape(b.length, V)
        .dataSync<Float32Array>()
        .slice(7 * V),
      'cropped',
      1e-5,
      1e-5,
    );
  });
  // Through generation: the kept cache reuses the common prefix and draws what a fresh cache draws.
  const kept = new KeptCache();
  const o = { maxTokens: 4, temperature: 0 };
  const first = [...generateStream(model, a, o, kept)].map((t) => t.id);
  assert.deepEqual(kept.ids, [...a, ...first.slice(0, 3)]);
  const again = [...generateStream(model, b, o, kept)].map((t) => t.id);
  assert.equal(kept.reused, 7);
  assert.equal(kept.dropped, a.length + 3 - 7);
  assert.deepEqual(
    again,
    [...generateStream(model, b, o)].map((t) => t.id),
  );
  kept.release();
});
