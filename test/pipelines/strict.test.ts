/**
 * The pipelines are as strict as the CLI (issue 48): unknown option names are refused with the
 * nearest known one, values of the wrong kind are named with the type that came, what the CLI
 * prints on stderr reaches callers as warnings, generation stops at the model's context unless
 * asked otherwise, and an AbortSignal cancels decoding.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { pipeline } from '../../src/index.ts';
import { checkOptions, describeValue, didYouMean, type PipelineWarning } from '../../src/pipelines/options.ts';
import { root } from '../helpers/cli.ts';

const GPT = join(root, 'models/gpt-multi30k-char');
const EN_DE = join(root, 'models/multi30k-en-de');

test('the validator: did you mean, across case and _; every kind named with the type that came', () => {
  const known = ['beam', 'alpha', 'maxLength', 'maxNewTokens', 'ensemble'];
  assert.equal(didYouMean('beams', known), 'beam');
  assert.equal(didYouMean('max_new_tokens', known), 'maxNewTokens');
  assert.equal(didYouMean('MAX-LENGTH', known), 'maxLength');
  assert.equal(didYouMean('ensembl', known), 'ensemble');
  assert.equal(didYouMean('temperature', known), undefined);
  assert.equal(describeValue('4'), "string '4'");
  assert.equal(describeValue(1.5), 'number 1.5');
  assert.equal(describeValue(null), 'null');
  assert.equal(describeValue([1]), 'an array');
  const spec = { beam: 'positiveInt', mbr: 'boolean', signal: 'signal' } as const;
  assert.throws(
    () => checkOptions('t', { beam: '4' }, spec),
    /^Error: t: beam: expected a positive integer, got string '4'$/,
  );
  assert.throws(() => checkOptions('t', { beam: 2.5 }, spec), /t: beam: expected a positive integer, got number 2\.5/);
  assert.throws(() => checkOptions('t', { mbr: 1 }, spec), /t: mbr: expected true or false, got number 1/);
  assert.throws(() => checkOptions('t', { signal: {} }, spec), /t: signal: expected an AbortSignal/);
  assert.throws(() => checkOptions('t', 'fast', spec), /t: options: expected an object, got string 'fast'/);
  assert.throws(
    () => checkOptions('t', { beams: 4 }, spec),
    /^Error: t: unknown option 'beams' \(did you mean 'beam'\?\); it takes beam, mbr, signal$/,
  );
  assert.throws(() => checkOptions('t', { zzz: 1 }, spec), /^Error: t: unknown option 'zzz'; it takes/);
  checkOptions('t', { beam: undefined, mbr: false, signal: new AbortController().signal }, spec);
  checkOptions('t', undefined, spec);
});

test('pipeline(): unknown task, options and a missing folder are named', async () => {
  await assert.rejects(
    pipeline('translation', EN_DE, { ensembl: false } as never),
    /pipeline\('translation'\): unknown option 'ensembl' \(did you mean 'ensemble'\?\)/,
  );
  await assert.rejects(
    pipeline('translation', EN_DE, { ensemble: 'no' } as never),
    /pipeline\('translation'\): ensemble: expected true or false, got string 'no'/,
  );
  await assert.rejects(
    (pipeline as (t: string) => Promise<unknown>)('translation'),
    /pipeline\('translation'\): folder: expected a model folder .*got undefined/,
  );
  await assert.rejects(pipeline('translation', ''), /folder: expected a model folder .*got an empty string/);
  await assert.rejects(
    pipeline('translate' as never, EN_DE),
    /pipeline: unknown task 'translate' \(did you mean 'translation'\?\)/,
  );
});

test('translation: unknown options, wrong types, and warnings for truncated, skipped and empty lines', async () => {
  const translate = await pipeline('translation', EN_DE, { ensemble: false });
  await assert.rejects(
    translate('A dog.', { beams: 4 } as never),
    /translation: unknown option 'beams' \(did you mean 'beam'\?\)/,
  );
  await assert.rejects(
    translate('A dog.', { beam: '4' } as never),
    /translation: beam: expected a positive integer, got string '4'/,
  );
  await assert.rejects(
    translate('A dog.', { alpha: -1 }),
    /translation: alpha: expected a finite number >= 0, got number -1/,
  );
  await assert.rejects(translate(5 as never), /translation: expected a string or an array of strings, got number 5/);
  await assert.rejects(translate(['a', 7] as never), /translation: input 1: expected a string, got number 7/);
  // decoding() answers what a call would use, checked the same way.
  assert.deepEqual(translate.decoding({ beam: 1 }), { beam: 1, alpha: translate.decoding().alpha });
  assert.throws(() => translate.decoding({ beem: 1 } as never), /did you mean 'beam'/);

  const long = 'a dog '.repeat(200).trim();
  const warnings: PipelineWarning[] = [];
  const out = await translate(['A dog.', long, ''], { beam: 1, warnEmpty: true, onWarning: (w) => warnings.push(w) });
  assert.equal(out.length, 3);
  assert.ok(out[1].length > 0, 'a truncated line is still translated');
  assert.deepEqual(
    warnings.map((w) => [w.kind, w.line]),
    [
      ['truncated', 2],
      ['empty', 3],
    ],
  );
  assert.match(warnings[0].message, /^line 2: \d+ tokens, truncated to 256$/);
  // Without warnEmpty an empty line is no warning; with skipLong the long one is left empty.
  const skipped: PipelineWarning[] = [];
  const out2 = await translate(['A dog.', long, ''], { beam: 1, skipLong: true, onWarning: (w) => skipped.push(w) });
  assert.deepEqual(out2, [out[0], '', '']);
  assert.deepEqual(
    skipped.map((w) => w.kind),
    ['skipped'],
  );
  // Without onWarning, console.warn says it: never nowhere.
  const said: unknown[][] = [];
  const warn = console.warn;
  console.warn = (...a: unknown[]) => said.push(a);
  try {
    await translate(long, { beam: 1 });
  } finally {
    console.warn = warn;
  }
  assert.equal(said.length, 1);
  assert.match(String(said[0][0]), /^qkv: line 1: \d+ tokens, truncated to 256$/);
});

test('translation: an AbortSignal cancels, already aborted, from a callback, or from a timer within a batch', async () => {
  const translate = await pipeline('translation', EN_DE, { ensemble: false });
  const lines = Array.from({ length: 70 }, (_, i) => `A man number ${i} rides a bike down the street.`);
  const ac = new AbortController();
  ac.abort();
  await assert.rejects(translate(lines, { signal: ac.signal }), { name: 'AbortError' });
  // Aborted after the first batch (64 sentences greedy): the second is never finished.
  const mid = new AbortController();
  let progress = 0;
  await assert.rejects(
    translate(lines, {
      beam: 1,
      signal: mid.signal,
      onProgress: (done) => {
        progress = done;
        mid.abort(new Error('stop here'));
      },
    }),
    /stop here/,
  );
  assert.equal(progress, 64);
  // A timer is heard within a batch: the first one (64 sentences) never finishes.
  progress = 0;
  await assert.rejects(
    translate(lines, { beam: 1, signal: AbortSignal.timeout(1), onProgress: (done) => (progress = done) }),
    { name: 'TimeoutError' },
  );
  assert.equal(progress, 0);
  // With a signal that never fires, the strings are those of a call without one.
  for (const beam of [1, 3])
    assert.deepEqual(
      await translate(lines.slice(0, 5), { beam, signal: new AbortController().signal }),
      await translate(lines.slice(0, 5), { beam }),
    );
});

test('text-generation: unknown options, wrong types, a prompt that is no string, unknown characters warned', async () => {
  const generate = await pipeline('text-generation', GPT);
  await assert.rejects(
    generate('A dog', { max_new_tokens: 5 } as never),
    /text-generation: unknown option 'max_new_tokens' \(did you mean 'maxNewTokens'\?\)/,
  );
  await assert.rejects(
    generate('A dog', { seed: '1' } as never),
    /text-generation: seed: expected an integer >= 0, got string '1'/,
  );
  await assert.rejects(
    generate(5 as never),
    /^Error: text-generation: prompt: expected a string or chat messages \[\{ role, content \}\], got number 5$/,
  );
  await assert.rejects(async () => {
    for await (const _ of generate.stream('A dog', { topk: 3 } as never));
  }, /did you mean 'topK'/);
  const warnings: PipelineWarning[] = [];
  const text = await generate('A dog ☃☃', { maxNewTokens: 3, seed: 1, onWarning: (w) => warnings.push(w) });
  assert.equal(typeof text, 'string');
  assert.deepEqual(warnings, [
    {
      kind: 'unknown-tokens',
      message: "2 prompt token(s) are not in the model's vocabulary (encoded as unknown)",
    },
  ]);
  await generate('A dog', { maxNewTokens: 2, onWarning: () => assert.fail('no warning for known characters') });
});

test("text-generation: the model's context caps the length unless beyondContext", async () => {
  const generate = await pipeline('text-generation', GPT);
  const blockSize = generate.model.config.blockSize; // 128
  // 'A dog' is 5 characters after one separator: 6 of the context, 123 tokens to draw.
  const room = blockSize + 1 - 6;
  let n = 0;
  await generate('A dog', { seed: 1, onToken: () => n++ });
  assert.equal(n, Math.min(200, room), 'the default stops where the context ends');
  await assert.rejects(
    generate('A dog', { maxNewTokens: 100000 }),
    new RegExp(
      `maxNewTokens 100000 goes past this model's context: it holds ${blockSize} tokens, the prompt takes 6, which leaves ${room}`,
    ),
  );
  n = 0;
  await generate('A dog', { maxNewTokens: room, temperature: 0, onToken: () => n++ });
  assert.equal(n, room);
  n = 0;
  await generate('A dog', { maxNewTokens: room + 20, beyondContext: true, temperature: 0, onToken: () => n++ });
  assert.equal(n, room + 20);
});

test('text-generation: an AbortSignal cancels between tokens, from a timer or a callback', async () => {
  const generate = await pipeline('text-generation', GPT);
  const ac = new AbortController();
  let n = 0;
  await assert.rejects(
    generate('A dog', {
      maxNewTokens: 50,
      signal: ac.signal,
      onToken: () => {
        if (++n === 3) ac.abort();
      },
    }),
    { name: 'AbortError' },
  );
  assert.equal(n, 3, 'no token after the abort');
  // A timer fires while it generates (thousands of tokens would take far longer than this).
  const t0 = performance.now();
  await assert.rejects(
    generate('A dog', { maxNewTokens: 100000, beyondContext: true, signal: AbortSignal.timeout(50) }),
    { name: 'TimeoutError' },
  );
  assert.ok(performance.now() - t0 < 20_000);
  await assert.rejects(
    async () => {
      for await (const _ of generate.stream('A dog', { signal: AbortSignal.abort() }));
    },
    { name: 'AbortError' },
  );
});
