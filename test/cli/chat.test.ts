/**
 * `qkv chat` on the chat folders of scripts/fixtures/make_hf_chat.py, piped: each reply equal to transformers'
 * text-generation pipeline on the whole conversation so far (greedy, 10 new tokens), the second turn's included,
 * while the KV cache is kept between turns; --system, /reset, --json, and a folder without a chat template.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pipeline } from '../../src/index.ts';
import type { ChatMessage } from '../../src/text/chat-template.ts';
import { qkv, root } from '../helpers/cli.ts';

const F = join(root, 'test/fixtures/hf-chat');
interface Generated {
  messages: ChatMessage[];
  generated_text: ChatMessage[];
}
const expected = (name: string) =>
  JSON.parse(readFileSync(join(F, name, 'expected-chat.json'), 'utf8')) as {
    stopStrings: {
      chat: Generated & { stop: string };
      text: { prompt: string; stop: string; generated: string };
    };
    pipeline: Generated;
    twoTurns: [Generated, Generated];
  };
const reply = (g: Generated) => g.generated_text.at(-1)!.content;
const turns = (stdout: string) =>
  stdout
    .trimEnd()
    .split('\n')
    .map((l) => JSON.parse(l) as { content: string; tokens: number; promptTokens: number; reused: number });

for (const name of ['smollm2-chatml', 'qwen2.5-chat', 'llama3-chat']) {
  test(`qkv chat ${name}: two piped turns, each transformers' greedy reply to the conversation so far`, () => {
    const e = expected(name);
    const [first, second] = e.twoTurns;
    const input = `${first.messages[0].content}\n${second.messages.at(-1)!.content}\n`;
    const j = qkv(['chat', '--model', join(F, name), '--max-tokens', '10', '--json'], input);
    assert.equal(j.status, 0, j.stderr);
    const got = turns(j.stdout);
    assert.deepEqual(
      got.map((t) => [t.content, t.tokens]),
      [
        [reply(first), 10],
        [reply(second), 10],
      ],
    );
    assert.match(j.stderr, /10 tokens in .* of the conversation's \d+ tokens from the KV cache/);
    // The second turn fed only what follows the common prefix (at least the first turn's prompt).
    assert.equal(got[0].reused, 0);
    assert.ok(got[1].reused >= got[0].promptTokens, `reused ${got[1].reused} of ${got[1].promptTokens}`);
    // The text as it streams: each reply, then a line end.
    const r = qkv(['chat', '--model', join(F, name), '--max-tokens', '10'], input);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, `${reply(first)}\n${reply(second)}\n`);
  });
}

test('qkv chat --system opens the conversation with a system message; /reset starts over', () => {
  const e = expected('qwen2.5-chat');
  const [system, user] = e.pipeline.messages;
  const r = qkv(
    ['chat', '--model', join(F, 'qwen2.5-chat'), '--max-tokens', '10', '--json', '--system', system.content],
    `${user.content}\n/reset\n\n${user.content}\n`,
  );
  assert.equal(r.status, 0, r.stderr);
  const got = turns(r.stdout);
  assert.deepEqual(
    got.map((t) => t.content),
    [reply(e.pipeline), reply(e.pipeline)],
  );
  assert.equal(got[1].reused, 0, 'after /reset nothing comes from the cache');
  assert.match(r.stderr, /conversation reset/);
});

test('qkv chat keeps the KV cache: the second turn feeds only what follows the first', async () => {
  // With one new token the cache holds exactly the first prompt, a prefix of the second rendering.
  const dir = join(F, 'llama3-chat');
  const r = qkv(['chat', '--model', dir, '--max-tokens', '1', '--json'], 'What is the man doing?\nAnd the two dogs?\n');
  assert.equal(r.status, 0, r.stderr);
  const [a, b] = turns(r.stdout);
  assert.equal(a.reused, 0);
  assert.equal(b.reused, a.promptTokens);
  assert.ok(b.promptTokens > a.promptTokens + 1);
  // The same reply as from the whole conversation fed at once (the pipeline, no kept cache).
  const generate = await pipeline('text-generation', dir);
  const [{ generated_text }] = await generate(
    [
      { role: 'user', content: 'What is the man doing?' },
      { role: 'assistant', content: a.content },
      { role: 'user', content: 'And the two dogs?' },
    ],
    { maxNewTokens: 1 },
  );
  assert.equal(b.content, generated_text.at(-1)!.content);
});

test("qkv chat --stop: transformers' reply with stop_strings", () => {
  const { chat } = expected('qwen2.5-chat').stopStrings;
  const r = qkv(
    ['chat', '--model', join(F, 'qwen2.5-chat'), '--max-tokens', '10', '--json', '--stop', chat.stop],
    `${chat.messages[0].content}\n`,
  );
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(
    turns(r.stdout).map((t) => t.content),
    [reply(chat)],
  );
});

test("qkv generate --stop: transformers' continuation with stop_strings", () => {
  const { text } = expected('qwen2.5-chat').stopStrings;
  const r = qkv([
    'generate',
    '--model',
    join(F, 'qwen2.5-chat'),
    '--prompt',
    text.prompt,
    '--max-tokens',
    '10',
    '--stop',
    'no such text',
    '--stop',
    text.stop,
  ]);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, `${text.prompt}${text.generated}\n`);
});

test('qkv chat refuses a folder without a chat template in one line', () => {
  const r = qkv(['chat', '--model', join(root, 'test/fixtures/hf-llama/llama-gqa-tied')], 'hi\n');
  assert.equal(r.status, 1);
  assert.match(r.stderr, /^qkv: .*llama-gqa-tied: this folder has no chat template \(.*\): qkv generate .*\n$/);
});
