// What users run takes the compiled path (issue 62): pipeline('text-generation') and `qkv generate` on qkv's GPT,
// GPT-2 and Llama-family folders (a sliding window included), pipeline('translation') and `qkv translate` on qkv's
// seq2seq model, greedy, beam and sampling. With compiled on (`compiled: true`, `--compiled`) and off (the
// default: the dynamic cache op by op) the outputs are the same: the texts and ids, and the logits and scores bit
// for bit; and captureCounts shows the replays happen with it on and none with it off or left out.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { generateText } from '../../src/cli/commands/generate.ts';
import { translate } from '../../src/cli/commands/translate.ts';
import { encodeLines, sourceBatches } from '../../src/decode/batch.ts';
import { generateStream } from '../../src/decode/gpt.ts';
import { beamSearch, greedy } from '../../src/decode/search.ts';
import { generateStreamCompiled } from '../../src/decode/static-gpt.ts';
import { captureCounts, pipeline } from '../../src/index.ts';
import type { GenerationOptions } from '../../src/pipelines/text-generation.ts';
import type { BpeTokenizer } from '../../src/text/bpe.ts';
import { multi30kLines, root } from '../helpers/cli.ts';
import { tempDir } from '../e2e/tiny-model.ts';

const bits = (a: Float32Array): Uint32Array =>
  new Uint32Array(a.buffer.slice(a.byteOffset, a.byteOffset + a.byteLength));

/** Replays run by `fn` (captureCounts' difference). */
async function replaysOf(fn: () => Promise<unknown> | unknown): Promise<number> {
  const before = captureCounts.replays;
  await fn();
  return captureCounts.replays - before;
}

const LM_FOLDERS: [string, string, string][] = [
  ["qkv's character GPT", join(root, 'models/gpt-multi30k-char'), 'A dog runs'],
  ['GPT-2', join(root, 'test/fixtures/hf-gpt2-tiny'), 'A man is riding'],
  ['Llama, grouped KV heads', join(root, 'test/fixtures/hf-llama/llama-gqa-tied'), 'The dog'],
  ['Llama 3 rope scaling', join(root, 'test/fixtures/hf-llama/llama3-rope'), 'The dog'],
  ['Qwen2', join(root, 'test/fixtures/hf-llama/qwen2-bias-untied'), 'The dog'],
  ['Mistral, sliding window', join(root, 'test/fixtures/hf-llama/mistral-window'), 'The dog runs in the park'],
];

const DRAWS: [string, GenerationOptions][] = [
  ['greedy', { maxNewTokens: 12, temperature: 0 }],
  ['sampled', { maxNewTokens: 12, temperature: 0.9, topK: 20, topP: 0.95, seed: 7, repetitionPenalty: 1.3 }],
];

for (const [name, folder, prompt] of LM_FOLDERS) {
  test(`text-generation on ${name}: compiled and not, the same text and ids; the compiled one replays`, async () => {
    const generate = await pipeline('text-generation', folder);
    let context: number[] = [];
    for (const [how, options] of DRAWS) {
      const run = async (compiled: boolean | undefined) => {
        const ids: number[] = [];
        let text = '';
        const replays = await replaysOf(async () => {
          text = await generate(prompt, { ...options, compiled, onToken: (_, id) => ids.push(id) });
        });
        return { ids, text, replays };
      };
      const on = await run(true);
      const off = await run(false);
      const dflt = await run(undefined); // the default: off
      assert.equal(off.replays, 0, `${how}: compiled: false replays nothing`);
      assert.equal(dflt.replays, 0, `${how}: the default replays nothing`);
      assert.deepEqual(dflt.ids, off.ids, how);
      assert.ok(on.replays >= on.ids.length - 2, `${how}: ${on.replays} replays for ${on.ids.length} tokens`);
      assert.ok(on.ids.length >= 4, `${how}: ${on.ids.length} tokens`);
      assert.deepEqual(on.ids, off.ids, how);
      assert.equal(on.text, off.text, how);
      if (how === 'greedy') context = on.ids.slice(0, 4);
    }
    // The logits each token was drawn from, through what the pipeline calls (ids of the vocabulary as the prompt):
    // bit for bit.
    for (const [how, { seed, temperature, topK, topP, repetitionPenalty }] of DRAWS) {
      const o = { maxTokens: 12, seed, temperature, topK, topP, repetitionPenalty };
      const dynamic = [...generateStream(generate.model, context, o)];
      const compiled = [...generateStreamCompiled(generate.model, context, o)];
      assert.deepEqual(
        compiled.map((t) => t.id),
        dynamic.map((t) => t.id),
        how,
      );
      dynamic.forEach((t, i) => assert.deepEqual(bits(compiled[i].logits), bits(t.logits), `${how}: step ${i}`));
    }
  });
}

test('text-generation: streaming, a stop string and the context cut take the compiled path too', async () => {
  const generate = await pipeline('text-generation', join(root, 'models/gpt-multi30k-char'));
  const o = { maxNewTokens: 40, temperature: 0.8, seed: 3, stopStrings: ['.'] };
  const streamed = async (compiled: boolean) => {
    const pieces: string[] = [];
    const replays = await replaysOf(async () => {
      for await (const p of generate.stream('Two men', { ...o, compiled })) pieces.push(p);
    });
    return { text: pieces.join(''), replays };
  };
  const [on, off] = [await streamed(true), await streamed(false)];
  assert.ok(on.replays > 0);
  assert.equal(off.replays, 0);
  assert.equal(on.text, off.text);
  assert.equal(on.text, await generate('Two men', { ...o, compiled: false }));
  // Past the context (128 tokens): cut to its last half and refilled, as the dynamic cache does.
  const long = { maxNewTokens: 150, beyondContext: true, temperature: 0 };
  assert.equal(await generate('A dog', long), await generate('A dog', { ...long, compiled: false }));
  await assert.rejects(
    generate('A dog', { compiled: 'yes' as unknown as boolean }),
    /compiled: expected true or false/,
  );
});

test('qkv generate and --compiled: the same text; only the compiled one replays', async () => {
  const run = async (compiled?: true) => {
    let text = '';
    const replays = await replaysOf(() =>
      generateText({
        model: join(root, 'test/fixtures/hf-gpt2-tiny'),
        prompt: 'A dog\nA man',
        maxTokens: 10,
        temperature: 0.8,
        seed: 5,
        cache: true,
        ...(compiled !== undefined && { compiled }),
        log: () => {},
        write: (s) => {
          text += s;
        },
      }),
    );
    return { text, replays };
  };
  const [on, off] = [await run(true), await run()];
  assert.ok(on.replays > 0);
  assert.equal(off.replays, 0);
  assert.equal(on.text, off.text);
});

const EN_DE = join(root, 'models/multi30k-en-de');
// Six sentences: live rows that cross the wasm GEMM's four-row switch as sentences finish.
const LINES = multi30kLines('val.en.gz').slice(10, 16);

test('translation on the shipped model: greedy and beam 4, compiled and not, the same strings and scores', async () => {
  const translate = await pipeline('translation', EN_DE);
  for (const beam of [1, 4]) {
    const run = async (options: object) => {
      let out: string[] = [];
      const replays = await replaysOf(async () => {
        out = await translate(LINES, { beam, ...options });
      });
      return { out, replays };
    };
    const on = await run({ compiled: true });
    const off = await run({});
    assert.equal((await run({ compiled: false })).replays, 0, `beam ${beam}`);
    assert.ok(on.replays > 0, `beam ${beam}`);
    assert.equal(off.replays, 0, `beam ${beam}`);
    assert.deepEqual(on.out, off.out, `beam ${beam}`);
    if (beam === 1) continue;
    // With a signal the searches pause before every step (decode/pausing.ts): the compiled path too, its static
    // cache sized for the beam.
    const paused = await run({ compiled: true, signal: new AbortController().signal });
    assert.ok(paused.replays > 0, `beam ${beam}, paused`);
    assert.deepEqual(paused.out, off.out, `beam ${beam}, paused`);
  }
  // The scores of the pipeline's batches (length-sorted, as it forms them), bit for bit.
  const { model } = translate;
  const tt = translate.targetTokenizer as BpeTokenizer;
  const ids = encodeLines(model, translate.tokenizer, LINES).ids;
  const o = { bosId: tt.bosId, eosId: tt.eosId };
  for (const { src } of sourceBatches(ids, model.config.padId, { beam: 4, alpha: 0.6, batchSize: 8 })) {
    for (const [how, search] of [
      ['greedy', (x: object) => greedy(model, src, { ...o, ...x })],
      ['beam 4', (x: object) => beamSearch(model, src, { ...o, beamSize: 4, ...x })],
    ] as const) {
      const [on, off] = [search({ staticCache: true }), search({})];
      assert.deepEqual(on.tokens, off.tokens, how);
      assert.deepEqual(on.logProbs, off.logProbs, how);
      assert.deepEqual(on.scores, off.scores, how);
      assert.deepEqual('hypotheses' in on && on.hypotheses, 'hypotheses' in off && off.hypotheses, how);
    }
  }
});

test('qkv translate and --compiled: the same lines', async () => {
  const dir = tempDir('qkv-compiled-');
  const input = join(dir, 'in.txt');
  writeFileSync(input, `${LINES.slice(0, 3).join('\n')}\n`);
  const run = async (compiled?: true) => {
    const output = join(dir, `out-${compiled}.txt`);
    const replays = await replaysOf(() =>
      translate({ model: EN_DE, input, output, beam: 4, ...(compiled !== undefined && { compiled }), log: () => {} }),
    );
    return { lines: readFileSync(output, 'utf8'), replays };
  };
  const [on, off] = [await run(true), await run()];
  assert.ok(on.replays > 0);
  assert.equal(off.replays, 0);
  assert.equal(on.lines, off.lines);
  assert.equal(on.lines.split('\n').length, 4);
});
