/**
 * `qkv translate --stream` (issue 39): each line is translated as it arrives. The test talks to the
 * child as a user at a terminal would: it sends a line, waits for its translation, and only then
 * sends the next (a translator that waited for the end of its input would never answer). An empty
 * line gives an empty line and is no error; an over-long one is reported as in batch mode (exit 2).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { makeTinyModel } from '../e2e/tiny-model.ts';
import { qkv, root } from '../helpers/cli.ts';

const { dir, tokenizer } = makeTinyModel(); // maxLen 24
const good = ['A dog runs in the park.', 'Two men are playing soccer.', 'A little girl climbs a tree.'];
const LONG = 'A dog runs in the park. '.repeat(6).trim();

/** A `qkv translate --stream` child: send a line, then read the one line that answers it. */
function streamingTranslator(args: string[]) {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', join(root, 'src/cli/main.ts'), 'translate', '--stream', ...args],
    { cwd: root },
  );
  let out = '';
  let err = '';
  const waiting: ((line: string) => void)[] = [];
  const ended = new Promise<number | null>((resolve) => child.on('close', resolve));
  child.stderr.on('data', (c) => (err += c));
  child.stdout.on('data', (c) => {
    out += c;
    for (let i = out.indexOf('\n'); i >= 0 && waiting.length > 0; i = out.indexOf('\n')) {
      const line = out.slice(0, i);
      out = out.slice(i + 1);
      waiting.shift()!(line);
    }
  });
  return {
    /** Writes `line` and resolves with the output line it gets back; rejects if the child ends first. */
    ask(line: string): Promise<string> {
      return new Promise((resolve, reject) => {
        waiting.push(resolve);
        void ended.then((status) =>
          reject(new Error(`qkv exited (status ${status}) before answering '${line}': ${err}`)),
        );
        child.stdin.write(`${line}\n`);
      });
    },
    async end(): Promise<{ status: number | null; rest: string; stderr: string }> {
      child.stdin.end();
      const status = await ended;
      return { status, rest: out, stderr: err };
    },
  };
}

test('translate --stream answers each line before the next is sent, as the batch translation does; an empty line is an empty line, exit 0', {
  timeout: 300_000,
}, async () => {
  const batch = qkv(['translate', '--model', dir, '--beam', '1'], `${good.join('\n')}\n`);
  assert.equal(batch.status, 0, batch.stderr);
  const expected = batch.stdout.split('\n');

  const t = streamingTranslator(['--model', dir, '--beam', '1']);
  assert.equal(await t.ask(good[0]), expected[0]);
  assert.equal(await t.ask(''), '', 'an empty line gives an empty line');
  assert.equal(await t.ask(good[1]), expected[1]);
  assert.equal(await t.ask('   '), '', 'a blank line too');
  assert.equal(await t.ask(good[2]), expected[2]);
  const r = await t.end();
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.rest, '', 'nothing after the last answer');
  assert.equal(r.stderr, '', 'empty lines are not reported');
});

test('translate --stream reports an over-long line when it comes (truncated, as in batch mode) and exits 2', {
  timeout: 300_000,
}, async () => {
  const n = tokenizer.encode(LONG).length;
  assert.ok(n > 24, `${n} tokens`);
  const first24 = tokenizer.decode(tokenizer.encode(LONG).slice(0, 24));
  const cut = qkv(['translate', '--model', dir, '--beam', '2'], `${first24}\n`);
  assert.equal(cut.status, 0, cut.stderr);

  const t = streamingTranslator(['--model', dir, '--beam', '2']);
  const a = await t.ask(good[0]);
  assert.notEqual(a, '');
  assert.equal(await t.ask(LONG), cut.stdout.split('\n')[0], 'the long line is the translation of its first 24 tokens');
  assert.equal(await t.ask(''), '');
  const r = await t.end();
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stderr, new RegExp(`^qkv: line 2: ${n} tokens, truncated to 24$`, 'm'));
  assert.match(r.stderr, /^qkv: 1 of 3 lines degraded \(1 truncated\); exit status 2$/m);
  assert.doesNotMatch(r.stderr, /line 3/, 'the empty line is not reported');
});
