/**
 * Fuzzing the tokenizer loaders and decoders (issue 13, item 5), as test/io/safetensors.test.ts
 * fuzzes safetensors: thousands of mutated tokenizer.json files of both kinds (BPE, characters)
 * and thousands of arbitrary id sequences each end in a result or a clear error naming the
 * tokenizer, never a crash of another kind, a hang or a huge allocation.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BpeTokenizer } from '../../src/text/bpe.ts';
import { CharTokenizer } from '../../src/text/chars.ts';
import { SENTENCES } from '../e2e/tiny-model.ts';
import { fuzz } from '../helpers/mutate.ts';
import { rng } from '../helpers/random.ts';

export const FUZZ_INPUTS = 4000;
const bpe = BpeTokenizer.learn(SENTENCES, { vocabSize: 120, minFrequency: 1 });
const chars = CharTokenizer.learn(SENTENCES);

const SENTENCE = 'A dog runs in the park. Ünïcödé ▁ 🙂';

/**
 * A loaded tokenizer must work: encode and decode a sentence, and decode arbitrary ids (or refuse
 * them clearly). Its work is bounded by the size of its input, not by a clock: a tokenizer.json of
 * n characters holds at most n tokens and merges, and a sentence never encodes to more ids than it
 * has UTF-8 bytes (a hang or a blow-up would need one of these to grow past its input).
 */
function exercise(t: BpeTokenizer | CharTokenizer, input: unknown, seed: number): void {
  const size = (typeof input === 'string' ? input : JSON.stringify(input)).length;
  const merges = t instanceof BpeTokenizer ? t.merges.length : 0;
  assert.ok(
    t.vocabSize + merges <= size,
    `a tokenizer.json of ${size} characters loaded ${t.vocabSize} tokens and ${merges} merges`,
  );
  const ids = t.encode(SENTENCE);
  assert.ok(
    ids.length <= Buffer.byteLength(SENTENCE),
    `${ids.length} ids for a sentence of ${Buffer.byteLength(SENTENCE)} bytes`,
  );
  t.decode(ids);
  decodeArbitrary(t, seed);
}

const ODD_IDS = [-1, -0, 0.5, Number.NaN, Infinity, -Infinity, 2 ** 31, 2 ** 53, 1e308];

function decodeArbitrary(t: BpeTokenizer | CharTokenizer, seed: number): void {
  const r = rng(seed);
  const ids = Array.from({ length: 1 + Math.floor(r() * 12) }, () =>
    r() < 0.8 ? Math.floor(r() * (t.vocabSize + 3)) : ODD_IDS[Math.floor(r() * ODD_IDS.length)],
  );
  try {
    const s = t.decode(ids);
    assert.equal(typeof s, 'string');
    assert.ok(
      ids.every((id) => Number.isInteger(id) && id >= 0 && id < t.vocabSize),
      `decoded ids outside the vocabulary: ${ids.join(', ')}`,
    );
  } catch (e) {
    if (
      !(e instanceof RangeError) ||
      !/^(BpeTokenizer|CharTokenizer)\.decode: id \S+ outside the vocabulary of \d+$/.test(e.message)
    )
      throw e;
  }
}

test(`BpeTokenizer.fromJSON on ${FUZZ_INPUTS} mutated tokenizer.json files: a working tokenizer or a clear error`, () => {
  let seed = 0;
  const r = fuzz(
    FUZZ_INPUTS,
    101,
    bpe.toJSON(),
    (input) => exercise(BpeTokenizer.fromJSON(input), input, seed++),
    /^(BpeTokenizer(\.fromJSON)?|BpeTokenizer\.decode): /,
  );
  assert.ok(r.ok > 100 && r.errors > 1000, `${r.ok} loaded, ${r.errors} refused`);
  process.stderr.write(
    `# ${r.ok} loaded, ${r.errors} refused with a clear error, slowest ${r.slowestMs.toFixed(0)} ms\n`,
  );
});

test(`CharTokenizer.fromJSON on ${FUZZ_INPUTS} mutated tokenizer.json files: a working tokenizer or a clear error`, () => {
  let seed = 0;
  const r = fuzz(
    FUZZ_INPUTS,
    202,
    chars.toJSON(),
    (input) => exercise(CharTokenizer.fromJSON(input), input, seed++),
    /^(CharTokenizer(\.fromJSON)?|CharTokenizer\.decode): /,
  );
  assert.ok(r.ok > 100 && r.errors > 1000, `${r.ok} loaded, ${r.errors} refused`);
  process.stderr.write(
    `# ${r.ok} loaded, ${r.errors} refused with a clear error, slowest ${r.slowestMs.toFixed(0)} ms\n`,
  );
});

test(`decode on ${FUZZ_INPUTS} arbitrary id sequences (out of range, negative, fractional, NaN): text or a RangeError naming the id`, () => {
  for (let i = 0; i < FUZZ_INPUTS; i++) {
    decodeArbitrary(bpe, i);
    decodeArbitrary(chars, i);
  }
  assert.throws(
    () => bpe.decode([bpe.vocabSize]),
    /^RangeError: BpeTokenizer\.decode: id 120 outside the vocabulary of 120$/,
  );
  assert.throws(() => chars.decode([Number.NaN]), /CharTokenizer\.decode: id NaN outside the vocabulary/);
  assert.throws(() => bpe.decode([0.5]), /id 0\.5 outside/);
});
