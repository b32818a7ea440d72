/**
 * BLEU against sacreBLEU 2.x. Expected strings/statistics were printed by sacreBLEU
 * (`corpus_bleu`, `sentence_bleu`, `BLEU(...).corpus_score`, `Tokenizer13a()`); the simple cases
 * also carry the hand arithmetic. Scores are compared to 1e-12 relative: JS `Math.log`/`Math.exp`
 * (fdlibm) may differ from glibc's in the last bit, never in the printed digits.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  computeBleu,
  corpusBleu,
  formatFixed,
  pairwiseSentenceBleu,
  sentenceBleu,
  tokenize13a,
} from '../../src/text/index.ts';

function close(actual: number, expected: number, what = 'value'): void {
  assert.ok(
    Math.abs(actual - expected) <= 1e-12 * Math.max(1, Math.abs(expected)),
    `${what}: ${actual} != ${expected}`,
  );
}

test('sacreBLEU README example: two reference streams', () => {
  const hyps = ['The dog bit the man.', "It wasn't surprising.", 'The man had just bitten him.'];
  const refs = [
    ['The dog bit the man.', 'It was not unexpected.', 'The man bit him first.'],
    ['The dog had bit the man.', 'No one was surprised.', 'The man had bitten the dog.'],
  ];
  const s = corpusBleu(hyps, refs);
  assert.equal(String(s), 'BLEU = 48.53 82.4/50.0/45.5/37.5 (BP = 0.943 ratio = 0.944 hyp_len = 17 ref_len = 18)');
  assert.equal(s.signature, 'nrefs:2|case:mixed|eff:no|tok:13a|smooth:exp|version:2.4.0-qkv');
  close(s.score, 48.530827009929865, 'score');
  assert.deepEqual(s.counts, [14, 7, 5, 3]);
  assert.deepEqual(s.totals, [17, 14, 11, 8]);
  assert.deepEqual(s.precisions, [82.3529411764706, 50.0, 45.45454545454545, 37.5]);
  close(s.bp, 0.9428731438548749, 'bp'); // exp(1 - 18/17)
  assert.equal(s.sysLen, 17);
  assert.equal(s.refLen, 18);
});

test('README hypotheses against the first reference stream only (string[] form)', () => {
  const hyps = ['The dog bit the man.', "It wasn't surprising.", 'The man had just bitten him.'];
  const refs = ['The dog bit the man.', 'It was not unexpected.', 'The man bit him first.'];
  const s = corpusBleu(hyps, refs);
  assert.equal(String(s), 'BLEU = 45.07 70.6/42.9/36.4/37.5 (BP = 1.000 ratio = 1.000 hyp_len = 17 ref_len = 17)');
  assert.equal(s.signature, 'nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.4.0-qkv');
  close(s.score, 45.06750632106114);
  assert.deepEqual(s.counts, [12, 6, 4, 3]);
  // Same result when given as one reference stream.
  assert.equal(String(corpusBleu(hyps, [refs])), String(s));
});

test('tokenizer 13a', () => {
  const cases: [string, string][] = [
    ['Hello, world.', 'Hello , world .'],
    // period/comma between digits stay: 3.5 and 1,000 are kept
    ['It costs 3.5 dollars, or 1,000 cents.', 'It costs 3.5 dollars , or 1,000 cents .'],
    // entities are unescaped first, then split as punctuation
    ['&quot;x&quot; &amp; &lt;y&gt;', '" x " & < y >'],
    // '-' is split only after a digit; "-\n" joins lines; "\n" is a space; <skipped> is dropped
    ['a-b 3-4 x-\ny <skipped>z', 'a-b 3 - 4 xy z'],
    ["Don't (stop)! [ok] {x} $5 50% @home #1 a/b", "Don't ( stop ) ! [ ok ] { x } $ 5 50 % @ home # 1 a / b"],
    ['U.S.A. e.g. end.', 'U . S . A . e . g . end .'],
    // non-ASCII punctuation is untouched
    ['Ein Mann mit Hut – „schön“ …', 'Ein Mann mit Hut – „schön“ …'],
    ['1.5.2,3', '1.5.2,3'],
    ['  a\t b  ', 'a b'],
  ];
  for (const [input, expected] of cases) assert.equal(tokenize13a(input), expected, JSON.stringify(input));
});

test('perfect match is 100 and no overlap is 0', () => {
  const perfect = corpusBleu(['a b c d e'], ['a b c d e']);
  assert.equal(
    String(perfect),
    'BLEU = 100.00 100.0/100.0/100.0/100.0 (BP = 1.000 ratio = 1.000 hyp_len = 5 ref_len = 5)',
  );
  close(perfect.score, 100);
  const none = corpusBleu(['a b c d e'], ['f g h i j']);
  assert.equal(none.score, 0);
  assert.equal(String(none), 'BLEU = 0.00 0.0/0.0/0.0/0.0 (BP = 1.000 ratio = 1.000 hyp_len = 5 ref_len = 5)');
  assert.deepEqual(none.totals, [5, 4, 3, 2]);
});

test('brevity penalty', () => {
  // All n-grams match (6/6, 5/5, 4/4, 3/3) but hyp_len 6 < ref_len 9: BP = exp(1 - 9/6) = exp(-0.5) = 0.60653...
  const s = corpusBleu(['the cat sat on the mat'], ['the cat sat on the mat today and yesterday']);
  assert.equal(String(s), 'BLEU = 60.65 100.0/100.0/100.0/100.0 (BP = 0.607 ratio = 0.667 hyp_len = 6 ref_len = 9)');
  close(s.bp, Math.exp(-0.5), 'bp');
  close(s.score, 60.653065971263366);
});

test('closest reference length, ties to the shorter; null drops a reference (nrefs:var)', () => {
  // Segment 1: hyp_len 3, refs 4 and 2 are equally close -> 2. Segment 2: only "x y z" (3) -> 3.
  const s = corpusBleu(
    ['a b c', 'x y'],
    [
      ['a b c d', null],
      ['a b', 'x y z'],
    ],
  );
  assert.equal(String(s), 'BLEU = 0.00 100.0/100.0/100.0/0.0 (BP = 1.000 ratio = 1.000 hyp_len = 5 ref_len = 5)');
  assert.equal(s.signature, 'nrefs:var|case:mixed|eff:no|tok:13a|smooth:exp|version:2.4.0-qkv');
  const t = corpusBleu(
    ['a b c d', 'e f'],
    [
      ['a b c d e f', 'e f'],
      ['a b', 'e f g h'],
    ],
  );
  assert.equal(String(t), 'BLEU = 100.00 100.0/100.0/100.0/100.0 (BP = 1.000 ratio = 1.500 hyp_len = 6 ref_len = 4)');
});

test('smoothing methods on hyp "a b c d" vs ref "a b d c"', () => {
  // matches: 1-grams 4/4, 2-grams 1/3 ("a b"), 3-grams 0/2, 4-grams 0/1.
  const h = ['a b c d'];
  const r = ['a b d c'];
  // none: a zero precision makes BLEU 0.
  assert.equal(
    String(corpusBleu(h, r, { smoothMethod: 'none' })),
    'BLEU = 0.00 100.0/33.3/0.0/0.0 (BP = 1.000 ratio = 1.000 hyp_len = 4 ref_len = 4)',
  );
  // floor 0.1: p3 = 100*0.1/2 = 5, p4 = 100*0.1/1 = 10; BLEU = (100 * 33.33 * 5 * 10)^(1/4) = 20.205...
  const floor = corpusBleu(h, r, { smoothMethod: 'floor' });
  assert.equal(String(floor), 'BLEU = 20.21 100.0/33.3/5.0/10.0 (BP = 1.000 ratio = 1.000 hyp_len = 4 ref_len = 4)');
  close(floor.score, 20.205155046766233);
  assert.equal(floor.signature, 'nrefs:1|case:mixed|eff:no|tok:13a|smooth:floor[0.10]|version:2.4.0-qkv');
  // add-k 1: orders >= 2 get +1 on counts and totals: 2/4, 1/3, 1/2 (reported so, as sacreBLEU does).
  const addk = corpusBleu(h, r, { smoothMethod: 'add-k' });
  assert.equal(String(addk), 'BLEU = 53.73 100.0/50.0/33.3/50.0 (BP = 1.000 ratio = 1.000 hyp_len = 4 ref_len = 4)');
  assert.deepEqual(addk.counts, [4, 2, 1, 1]);
  assert.deepEqual(addk.totals, [4, 4, 3, 2]);
  assert.equal(addk.signature, 'nrefs:1|case:mixed|eff:no|tok:13a|smooth:add-k[1.00]|version:2.4.0-qkv');
  // exp: the k-th zero precision is 100 / (2^k * total): p3 = 100/(2*2) = 25, p4 = 100/(4*1) = 25;
  // BLEU = (100 * 33.33 * 25 * 25)^(1/4) = 37.99...
  const exp = corpusBleu(h, r);
  assert.equal(String(exp), 'BLEU = 37.99 100.0/33.3/25.0/25.0 (BP = 1.000 ratio = 1.000 hyp_len = 4 ref_len = 4)');
  close(exp.score, 37.99178428257963);
  close(exp.score, 100 * (1 * (1 / 3) * 0.25 * 0.25) ** (1 / 4), 'hand formula');
  assert.equal(
    corpusBleu(h, r, { smoothMethod: 'floor', smoothValue: 0.5 }).signature,
    'nrefs:1|case:mixed|eff:no|tok:13a|smooth:floor[0.50]|version:2.4.0-qkv',
  );
});

test('lowercase and tokenize none', () => {
  const lc = corpusBleu(['THE Cat sat'], ['the cat sat'], { lowercase: true });
  assert.equal(String(lc), 'BLEU = 0.00 100.0/100.0/100.0/0.0 (BP = 1.000 ratio = 1.000 hyp_len = 3 ref_len = 3)');
  assert.equal(lc.signature, 'nrefs:1|case:lc|eff:no|tok:13a|smooth:exp|version:2.4.0-qkv');
  const none = corpusBleu(['a,b c.'], ['a , b c .'], { tokenize: 'none' });
  assert.equal(String(none), 'BLEU = 0.00 0.0/0.0/0.0/0.0 (BP = 0.223 ratio = 0.400 hyp_len = 2 ref_len = 5)');
  assert.equal(none.signature, 'nrefs:1|case:mixed|eff:no|tok:none|smooth:exp|version:2.4.0-qkv');
});

test('sentence BLEU: exp smoothing with effective order, by hand', () => {
  // "cat the" vs "the cat": 1-grams 2/2 -> 100; 2-grams 0/1 -> first zero, exp: 100 / (2 * 1) = 50;
  // 3-grams: total 0 -> stop, effective order 2. BLEU = exp((ln 100 + ln 50) / 2) = sqrt(5000) = 70.7107.
  const s = sentenceBleu('cat the', ['the cat']);
  close(s.score, Math.sqrt(5000), 'score');
  assert.equal(String(s), 'BLEU = 70.71 100.0/50.0/0.0/0.0 (BP = 1.000 ratio = 1.000 hyp_len = 2 ref_len = 2)');
  assert.equal(s.signature, 'nrefs:1|case:mixed|eff:yes|tok:13a|smooth:exp|version:2.4.0-qkv');
  // Without smoothing the zero bigram precision gives 0.
  assert.equal(
    String(sentenceBleu('cat the', 'the cat', { smoothMethod: 'none' })),
    'BLEU = 0.00 100.0/0.0/0.0/0.0 (BP = 1.000 ratio = 1.000 hyp_len = 2 ref_len = 2)',
  );

  // "the cat" vs "the cat sat": 2/2, 1/1, then totals 0 -> effective order 2, precisions 100, 100;
  // BP = exp(1 - 3/2) = 0.60653 -> BLEU 60.65.
  const t = sentenceBleu('the cat', 'the cat sat');
  close(t.score, 100 * Math.exp(-0.5));
  assert.equal(String(t), 'BLEU = 60.65 100.0/100.0/0.0/0.0 (BP = 0.607 ratio = 0.667 hyp_len = 2 ref_len = 3)');

  // 13a: "The cat sat on the mat ." vs "The cat is on the mat .": 6/7, 4/6, 2/5, 1/4, BP 1;
  // BLEU = 100 * (6/7 * 4/6 * 2/5 * 1/4)^(1/4) = 48.89.
  const u = sentenceBleu('The cat sat on the mat.', ['The cat is on the mat.']);
  assert.equal(String(u), 'BLEU = 48.89 85.7/66.7/40.0/25.0 (BP = 1.000 ratio = 1.000 hyp_len = 7 ref_len = 7)');
  close(u.score, 100 * ((6 / 7) * (4 / 6) * (2 / 5) * (1 / 4)) ** (1 / 4), 'hand formula');
  close(u.score, 48.892302243490086);

  // Two references, closest length tie (4 vs 2 for hyp_len 3) -> the shorter: ratio 1.5.
  assert.equal(
    String(sentenceBleu('a b c', ['a b c d', 'a b'])),
    'BLEU = 100.00 100.0/100.0/100.0/0.0 (BP = 1.000 ratio = 1.500 hyp_len = 3 ref_len = 2)',
  );

  const v = sentenceBleu(
    'It is a guide to action which ensures that the military always obeys the commands of the party.',
    ['It is a guide to action that ensures that the military will forever heed Party commands.'],
  );
  assert.equal(String(v), 'BLEU = 39.67 63.2/44.4/35.3/25.0 (BP = 1.000 ratio = 1.118 hyp_len = 19 ref_len = 17)');
  close(v.score, 39.67088290836578);
});

test('pairwiseSentenceBleu: every ordered pair equals sentenceBleu to the bit, options included; the diagonal is 0', () => {
  const sents = [
    'Ein Hund läuft.',
    'Ein Hund rennt über die Wiese.',
    'ein hund rennt über die Wiese!',
    '',
    'Zwei Hunde, ein Ball.',
  ];
  for (const options of [
    undefined,
    { lowercase: true },
    { tokenize: 'none' as const, smoothMethod: 'floor' as const },
  ]) {
    const m = pairwiseSentenceBleu(sents, options);
    assert.equal(m.length, sents.length);
    sents.forEach((h, i) =>
      sents.forEach((r, j) =>
        assert.equal(m[i][j], i === j ? 0 : sentenceBleu(h, r, options).score, `${i} against ${j}`),
      ),
    );
  }
  assert.notEqual(
    pairwiseSentenceBleu(sents)[1][2],
    pairwiseSentenceBleu(sents, { lowercase: true })[1][2],
    'lowercase is applied',
  );
  assert.deepEqual(pairwiseSentenceBleu([]), []);
});

test('formatFixed rounds like Python (exact value, ties to even; expectations checked against Python f-strings)', () => {
  assert.equal(formatFixed(12.25, 1), '12.2'); // exact tie -> even (toFixed gives 12.3)
  assert.equal(formatFixed(12.35, 1), '12.3'); // 12.35 is 12.3499999... in binary
  assert.equal(formatFixed(0.125, 2), '0.12');
  assert.equal(formatFixed(0.375, 2), '0.38');
  assert.equal(formatFixed(2.5, 0), '2');
  assert.equal(formatFixed(3.5, 0), '4');
  assert.equal(formatFixed(100, 2), '100.00');
  assert.equal(formatFixed(0, 3), '0.000');
  assert.equal(formatFixed(0.9995, 3), '1.000'); // 0.99950000000000005... in binary
  assert.equal(formatFixed(48.530827009929865, 2), '48.53');
  assert.equal(formatFixed(-1.5, 0), '-2');
});

test('computeBleu from statistics and input validation', () => {
  const s = computeBleu([14, 7, 5, 3], [17, 14, 11, 8], 17, 18, { smoothMethod: 'exp' });
  assert.equal(String(s), 'BLEU = 48.53 82.4/50.0/45.5/37.5 (BP = 0.943 ratio = 0.944 hyp_len = 17 ref_len = 18)');
  // empty hypothesis: BP 0, score 0
  assert.equal(
    String(corpusBleu([''], ['a b'])),
    'BLEU = 0.00 0.0/0.0/0.0/0.0 (BP = 0.000 ratio = 0.000 hyp_len = 0 ref_len = 2)',
  );
  assert.throws(() => corpusBleu(['a', 'b'], [['a']]), /reference stream 0 has 1 lines/);
});
