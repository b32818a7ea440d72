/**
 * Fuzzing the SentencePiece readers as test/text/tokenizer-fuzz.once.test.ts fuzzes the BPE ones:
 * mutated `.spm` files (bytes changed, files cut) and mutated Unigram tokenizer.json files each end
 * in a model that encodes and decodes, or in an error naming the file; arbitrary ids end in text or
 * a RangeError naming the file. Never another kind of exception, and never an input slower than 1 s.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { MarianTokenizer } from '../../src/text/marian-tokenizer.ts';
import { SentencePiece, readSpmModel } from '../../src/text/sentencepiece.ts';
import { fuzz } from '../helpers/mutate.ts';
import { rng } from '../helpers/random.ts';

const FIXTURES = new URL('../fixtures/spm/', import.meta.url);
const SENTENCE = 'A man ﬁ ＡＢＣ 😀 rides  a bike.\t>>de<< é';
const ODD_IDS = [-1, 0.5, Number.NaN, Infinity, 2 ** 31, 1e308];

function exercise(sp: SentencePiece, seed: number): void {
  const { pieces, ids } = sp.encode(SENTENCE);
  assert.equal(pieces.length, ids.length);
  assert.equal(typeof sp.decode(ids), 'string');
  const r = rng(seed);
  const arbitrary = Array.from({ length: 1 + Math.floor(r() * 10) }, () =>
    r() < 0.8 ? Math.floor(r() * (sp.vocabSize + 3)) : ODD_IDS[Math.floor(r() * ODD_IDS.length)]!,
  );
  try {
    sp.decode(arbitrary);
    assert.ok(arbitrary.every((id) => Number.isInteger(id) && id >= 0 && id < sp.vocabSize));
  } catch (e) {
    if (!(e instanceof RangeError) || !e.message.startsWith(`${sp.name}: decode: id `)) throw e;
  }
}

for (const name of ['de.spm', 'fr.spm']) {
  test(`${name}: 500 mutated files load and work, or fail naming the file`, () => {
    const base = new Uint8Array(readFileSync(new URL(name, FIXTURES)));
    const r = rng(name.length * 7919);
    let [ok, errors, slowest] = [0, 0, 0];
    for (let i = 0; i < 500; i++) {
      const bytes = base.slice(0, r() < 0.2 ? Math.floor(r() * base.length) : base.length);
      for (let e = 1 + Math.floor(r() * 3); e > 0; e--) bytes[Math.floor(r() * bytes.length)] = Math.floor(r() * 256);
      const t0 = performance.now();
      try {
        exercise(SentencePiece.fromBytes(bytes, name), i);
        ok++;
      } catch (e) {
        if (!(e instanceof Error) || e.constructor !== Error || !e.message.startsWith(`${name}: `))
          throw new Error(`input ${i}: an unclear error: ${e instanceof Error ? e.stack : e}`);
        errors++;
      }
      slowest = Math.max(slowest, performance.now() - t0);
    }
    assert.ok(ok > 50 && errors > 50, `ok ${ok}, errors ${errors}: both outcomes are exercised`);
    assert.ok(slowest < 1000, `slowest input ${slowest.toFixed(0)} ms`);
  });
}

test('Unigram tokenizer.json: 1,000 mutated files load and work, or fail naming the file', () => {
  const m = readSpmModel(readFileSync(new URL('de.spm', FIXTURES)), 'de.spm');
  const doc = {
    added_tokens: m.pieces.flatMap((p, id) => (p.type === 3 ? [{ id, content: p.piece, special: true }] : [])),
    normalizer: { type: 'Sequence', normalizers: [{ type: 'Replace', pattern: { Regex: ' {2,}' }, content: '▁' }] },
    pre_tokenizer: { type: 'Metaspace', replacement: '▁', prepend_scheme: 'always', split: true },
    model: { type: 'Unigram', unk_id: 0, byte_fallback: false, vocab: m.pieces.map((p) => [p.piece, p.score]) },
  };
  exercise(SentencePiece.fromTokenizerJson(doc, 'x/tokenizer.json'), 0);
  let seed = 0;
  const { ok, errors, slowestMs } = fuzz(
    1000,
    46,
    doc,
    (input) => exercise(SentencePiece.fromTokenizerJson(input, 'x/tokenizer.json'), seed++),
    /^x\/tokenizer\.json: /,
  );
  assert.ok(ok > 100 && errors > 100, `ok ${ok}, errors ${errors}`);
  assert.ok(slowestMs < 1000, `slowest input ${slowestMs.toFixed(0)} ms`);
});

test("MarianTokenizer.decode: any ids give text (HF's unknown id reads <unk>)", () => {
  const tok = MarianTokenizer.fromFiles({
    sourceSpm: readFileSync(new URL('en.spm', FIXTURES)),
    targetSpm: readFileSync(new URL('de.spm', FIXTURES)),
    vocab: readFileSync(new URL('vocab.json', FIXTURES), 'utf8'),
  });
  const r = rng(4646);
  for (let i = 0; i < 2000; i++) {
    const ids = Array.from({ length: Math.floor(r() * 12) }, () =>
      r() < 0.8 ? Math.floor(r() * (tok.vocabSize + 3)) : ODD_IDS[Math.floor(r() * ODD_IDS.length)]!,
    );
    assert.equal(typeof tok.decode(ids, { skipSpecialTokens: r() < 0.5 }), 'string');
  }
});
