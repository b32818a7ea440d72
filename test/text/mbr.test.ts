/**
 * MBR selection (text/mbr.ts) and its use by the translators (`qkv translate --mbr`): the chosen
 * candidate is the one with the highest mean utility against the others, by values worked by hand
 * (an integer overlap utility, and sacreBLEU sentence BLEU on a small case).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mbrSelect, sentenceBleu } from '../../src/text/index.ts';
import { outputText, translateIds } from '../../src/decode/batch.ts';
import { beamSearch } from '../../src/decode/search.ts';
import { Tensor } from '../../src/tensor/tensor.ts';
import { makeTinyModel, SENTENCES } from '../e2e/tiny-model.ts';

/** Shared words (as sets): an integer utility whose means are easy to compute by hand. */
const overlap = (h: string, r: string) => {
  const ref = new Set(r.split(' '));
  return new Set(h.split(' ').filter((w) => ref.has(w))).size;
};

test('mbrSelect: expected utility is the mean against the other candidates; the consensus wins over the first', () => {
  const c = ['x y z', 'a b c d', 'a b c e', 'a b d f'];
  const r = mbrSelect(c, { utility: overlap });
  // x y z: 0, 0, 0 -> 0; a b c d: 0, 3, 3 -> 2; a b c e: 0, 3, 2 -> 5/3; a b d f: 0, 3, 2 -> 5/3
  assert.deepEqual(r.expected, [0, 2, 5 / 3, 5 / 3]);
  assert.equal(r.index, 1);
});

test("mbrSelect: ties go to the earlier candidate (the search's order); a lone candidate is chosen", () => {
  assert.equal(mbrSelect(['p q', 'q p', 'r'], { utility: overlap }).index, 0);
  assert.equal(mbrSelect(['r', 'p q', 'q p'], { utility: overlap }).index, 1);
  assert.deepEqual(mbrSelect(['only one']), { index: 0, expected: [0] });
});

// Issue 40: expected utilities written out by hand, not recomputed with sentenceBleu. sacreBLEU's
// sentence BLEU (smooth 'exp', effective order) on three 4-word candidates (so the brevity penalty
// is 1): precisions p_n = 100·matches/total, and the k-th n-gram order with no match gets
// 100 / (2^k · total). BLEU = (p1·p2·p3·p4)^(1/4).
//   a b c d vs a b c e: 1-grams a b c of 4 (75), 2-grams ab bc of 3 (66.67), 3-gram abc of 2 (50),
//     4-grams none of 1: 100/(2·1) = 50. (75 · 66.67 · 50 · 50)^(1/4) = 12,500,000^(1/4) = 59.4604.
//     The same counts either way round (equal lengths), so U(c1, c0) is the same.
//   a b c d vs a x c d: 1-grams a c d of 4 (75), 2-gram cd of 3 (33.33), 3-grams none of 2:
//     100/(2·2) = 25, 4-grams none of 1: 100/(4·1) = 25. (75 · 33.33 · 25 · 25)^(1/4) =
//     1,562,500^(1/4) = 35.3553; the same the other way round.
//   a b c e vs a x c d: 1-grams a c of 4 (50), 2-grams none of 3: 100/(2·3) = 16.67, 3-grams none
//     of 2: 100/(4·2) = 12.5, 4-grams none of 1: 100/(8·1) = 12.5. (50 · 16.67 · 12.5 · 12.5)^(1/4) =
//     130,208.33^(1/4) = 18.9959; the same the other way round.
// Expected utilities (mean over the other two): c0 (59.46036 + 35.35534) / 2 = 47.4078,
// c1 (59.46036 + 18.99589) / 2 = 39.2281, c2 (35.35534 + 18.99589) / 2 = 27.1756: c0 wins.
test('mbrSelect: sentence-BLEU utilities of a small case, worked by hand', () => {
  const r = mbrSelect(['a b c d', 'a b c e', 'a x c d']);
  const u01 = 12_500_000 ** 0.25;
  const u02 = 1_562_500 ** 0.25;
  const u12 = (50 * (100 / 6) * 12.5 * 12.5) ** 0.25;
  const want = [(u01 + u02) / 2, (u01 + u12) / 2, (u02 + u12) / 2];
  r.expected.forEach((e, i) => assert.ok(Math.abs(e - want[i]) < 1e-9, `candidate ${i}: ${e}, by hand ${want[i]}`));
  assert.deepEqual(
    r.expected.map((e) => e.toFixed(4)),
    ['47.4078', '39.2281', '27.1756'],
  );
  assert.equal(r.index, 0);
});

test('mbrSelect: the default utility is sacreBLEU sentence BLEU, hypothesis against pseudo-reference', () => {
  const c = [
    'Ein Hund läuft .',
    'Ein Hund rennt über die Wiese .',
    'Ein Hund rennt über eine Wiese .',
    'Ein brauner Hund rennt über die Wiese .',
  ];
  const r = mbrSelect(c);
  const want = c.map((h, i) => c.filter((_, j) => j !== i).reduce((s, ref) => s + sentenceBleu(h, ref).score, 0) / 3);
  assert.deepEqual(r.expected, want);
  assert.equal(r.index, 1, 'the hypothesis closest to all the others');
  // The direction matters: BLEU's brevity penalty counts the hypothesis against the reference.
  assert.notEqual(sentenceBleu(c[0], c[1]).score, sentenceBleu(c[1], c[0]).score);
  const lc = mbrSelect(['ein hund .', 'Ein Hund .', 'Ein Hund läuft .'], { bleu: { lowercase: true } });
  assert.equal(lc.expected[0], lc.expected[1], 'case-insensitive with lowercase');
});

test('mbrSelect: bad input is named', () => {
  assert.throws(() => mbrSelect([]), /mbrSelect: candidates is empty; expected at least one candidate/);
  assert.throws(
    () => mbrSelect(['a', 3 as unknown as string]),
    /mbrSelect: candidates\[1\] must be a string, got number/,
  );
});

test("translateIds with mbr outputs the MBR choice among each sentence's beam pool", () => {
  const { model, tokenizer } = makeTinyModel(2);
  const lines = SENTENCES.slice(0, 3);
  const srcIds = lines.map((l) => tokenizer.encode(l));
  const mbr = translateIds(model, tokenizer, srcIds, { beam: 4, alpha: 0.6, mbr: true, batchSize: 1 });
  const plain = translateIds(model, tokenizer, srcIds, { beam: 4, alpha: 0.6, batchSize: 1 });
  srcIds.forEach((ids, i) => {
    const res = beamSearch(model, new Tensor(Int32Array.from(ids), [1, ids.length], 'int32'), {
      bosId: tokenizer.bosId,
      eosId: tokenizer.eosId,
      beamSize: 4,
    });
    const pool = res.hypotheses[0].map((h) => tokenizer.decode(h.tokens));
    assert.ok(pool.length > 1, 'a pool to choose from');
    assert.equal(plain[i], pool[0]);
    assert.equal(mbr[i], pool[mbrSelect(pool).index]);
  });
  assert.ok(
    mbr.some((t, i) => t !== plain[i]),
    'MBR changes at least one output here, so the flag is not ignored',
  );
  assert.throws(
    () =>
      outputText(
        {
          ...beamSearch(model, new Tensor(Int32Array.from(srcIds[0]), [1, srcIds[0].length], 'int32'), {
            bosId: tokenizer.bosId,
            eosId: tokenizer.eosId,
          }),
        },
        0,
        tokenizer,
        { beam: 1, mbr: true },
      ),
    /MBR chooses among beam search's hypotheses: needs beam 2 or more, got beam 1/,
  );
});
