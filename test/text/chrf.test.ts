/**
 * chrF against sacreBLEU 2.x: every case of sacreBLEU's own `test/test_chrf.py` (its expected
 * scores, checked there to 1e-4 against chrF++.py), with the same options and tolerance; the
 * chrF++ word n-grams, multiple references and code points by hand.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { corpusChrf, sentenceChrf, type ChrfOptions } from '../../src/text/index.ts';

const EPSILON = 1e-4;

function near(actual: number, expected: number, what: string): void {
  assert.ok(Math.abs(actual - expected) < EPSILON, `${what}: ${actual} != ${expected}`);
}

// test_chrf.py: corpus_chrf(hypotheses, [references], char_order=6, word_order=0, beta=3, eps_smoothing=...)
const EPS_CASES: [string[], string[], number][] = [
  [['abcdefg'], ['hijklmnop'], 0.0],
  [['a'], ['b'], 0.0],
  [[''], ['b'], 0.0],
  [[''], ['ref'], 0.0],
  [[''], ['reference'], 0.0],
  [['aa'], ['ab'], 8.3333],
  [['a', 'b'], ['a', 'c'], 8.3333],
  [['a'], ['a'], 16.6667],
  [['a b c'], ['a b c'], 50.0],
  [['a b c'], ['abc'], 50.0],
  [
    [
      ' risk assessment must be made of those who are qualified and expertise in the sector - these are the scientists .',
    ],
    [
      'risk assessment has to be undertaken by those who are qualified and expert in that area - that is the scientists .',
    ],
    63.36173,
  ],
  [
    [' Die    Beziehung zwischen  Obama und Netanjahu ist nicht gerade  freundlich. '],
    ['Das Verhältnis zwischen Obama und Netanyahu ist nicht gerade freundschaftlich.'],
    64.1302698,
  ],
  [['Niemand hat die Absicht, eine Mauer zu errichten'], ['Niemand hat die Absicht, eine Mauer zu errichten'], 100.0],
];

const EFFECTIVE_ORDER_CASES: [string[], string[], number][] = [
  [['a'], ['a'], 100.0],
  [[''], ['reference'], 0.0],
  [['a b c'], ['a b c'], 100.0],
  [['a b c'], ['abc'], 100.0],
  [[''], ['c'], 0.0],
  [['a', 'b'], ['a', 'c'], 50.0],
  [['aa'], ['ab'], 25.0],
];

const WHITESPACE_CASES: [string[], string[], number][] = [
  [
    ['Die Beziehung zwischen Obama und Netanjahu ist nicht gerade freundlich.'],
    ['Das Verhältnis zwischen Obama und Netanyahu ist nicht gerade freundschaftlich.'],
    67.3481606,
  ],
  [
    [
      'risk assessment must be made of those who are qualified and expertise in the sector - these are the scientists .',
    ],
    [
      'risk assessment has to be undertaken by those who are qualified and expert in that area - that is the scientists .',
    ],
    65.2414427,
  ],
];

const SENTENCE_CASES: [string, string[], number][] = [
  [
    'Co nás nejvíc trápí, protože lékaři si vybírají, kdo bude žít a kdo zemře.',
    ['Nejvíce smutní jsme z toho, že musíme rozhodovat o tom, kdo bude žít a kdo zemře.'],
    39.14078509,
  ],
  [
    'Nebo prostě nemají vybavení, které by jim pomohlo, uvedli lékaři.',
    ['A někdy nemáme ani potřebný materiál, abychom jim pomohli, popsali lékaři.'],
    31.22557079,
  ],
  [
    'Lapali po dechu, jejich životy skončily dřív, než skutečně začaly.',
    ['Lapali po dechu a pak jejich život skončil - dřív, než skutečně mohl začít, připomněli.'],
    57.15704367,
  ],
];

test('sacreBLEU test_chrf.py: ε smoothing (chrF++.py, NLTK, Moses), β 3', () => {
  const o: ChrfOptions = { charOrder: 6, wordOrder: 0, beta: 3, epsSmoothing: true };
  for (const [hyps, refs, expected] of EPS_CASES)
    near(corpusChrf(hyps, [refs], o).score, expected, JSON.stringify(hyps));
});

test("sacreBLEU test_chrf.py: effective order (sacreBLEU's default), β 3", () => {
  const o: ChrfOptions = { charOrder: 6, wordOrder: 0, beta: 3, epsSmoothing: false };
  for (const [hyps, refs, expected] of EFFECTIVE_ORDER_CASES)
    near(corpusChrf(hyps, [refs], o).score, expected, JSON.stringify(hyps));
});

test('sacreBLEU test_chrf.py: whitespace kept in the character n-grams, β 3', () => {
  for (const [hyps, refs, expected] of WHITESPACE_CASES) {
    near(corpusChrf(hyps, [refs], { beta: 3, whitespace: true }).score, expected, JSON.stringify(hyps));
  }
});

test('sacreBLEU test_chrf.py: sentence chrF2 with ε smoothing', () => {
  for (const [hyp, refs, expected] of SENTENCE_CASES)
    near(sentenceChrf(hyp, refs, { epsSmoothing: true }).score, expected, hyp);
});

test("defaults are chrF2 (6 character orders, no words, effective order); the string and signature are sacreBLEU's", () => {
  const s = corpusChrf(['a b c'], ['abc']);
  assert.equal(s.score, 100);
  assert.equal(String(s), 'chrF2 = 100.00');
  assert.equal(s.signature, 'nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.4.0-qkv');
  const pp = corpusChrf(['a b c'], ['abc'], { wordOrder: 2, lowercase: true, epsSmoothing: true, whitespace: true });
  assert.equal(pp.name, 'chrF2++');
  assert.equal(pp.signature, 'nrefs:1|case:lc|eff:no|nc:6|nw:2|space:yes|version:2.4.0-qkv');
});

test('chrF++ by hand: punctuation split off words, word 1- and 2-grams as two more orders', () => {
  // Hypothesis "the cat." → words [the, cat, .]; reference "the dog." → [the, dog, .].
  // Characters (spaces removed) "thecat." against "thedog.": 1-grams t,h,e,c,a,t,. (7) vs t,h,e,d,o,g,. (7):
  // matches t,h,e,. = 4; 2-grams th,he,ec,ca,at,t. vs th,he,ed,do,og,g.: 2; 3-grams the,hec,eca,cat,at.
  // vs the,hed,edo,dog,og.: 1; 4-grams 0 of 4; 5-grams 0 of 3; 6-grams 0 of 2.
  // Words: 1-grams 2 of 3 (the, .), 2-grams [the cat, cat .] vs [the dog, dog .]: 0 of 2.
  const s = corpusChrf(['the cat.'], ['the dog.'], { wordOrder: 2 });
  assert.deepEqual(s.statistics, [7, 7, 4, 6, 6, 2, 5, 5, 1, 4, 4, 0, 3, 3, 0, 2, 2, 0, 3, 3, 2, 2, 2, 0]);
  // Effective order: the mean precision and recall over the 8 orders both sides have (all), then F2.
  const p = (4 / 7 + 2 / 6 + 1 / 5 + 0 + 0 + 0 + 2 / 3 + 0) / 8;
  assert.ok(Math.abs(s.score - 100 * ((5 * p * p) / (4 * p + p))) < 1e-12, `${s.score}`);
  assert.equal(String(s), `chrF2++ = ${(100 * p).toFixed(2)}`);
  // One mark per word, the closing one first (sacreBLEU issue #124): '(hi)' → '(hi', ')'; but
  // '(hi )' → '(', 'hi' and ')' (a one-character word is kept whole). Word 1-grams: 1 of 2 match.
  const t = corpusChrf(['(hi)'], ['(hi )'], { wordOrder: 1, charOrder: 1 });
  assert.deepEqual(t.statistics.slice(3), [2, 3, 1]);
});

test('multiple references: each segment counts against the reference it scores best on; null drops one', () => {
  const hyps = ['a cat sat', 'the dog ran'];
  const refs = [
    ['a cat sat', 'dogs run'],
    ['a dog sat', 'the dog ran'],
  ];
  const s = corpusChrf(hyps, refs);
  assert.equal(s.score, 100);
  assert.equal(s.signature.split('|')[0], 'nrefs:2');
  const v = corpusChrf(hyps, [
    ['a cat sat', 'dogs run'],
    [null, 'the dog ran'],
  ]);
  assert.equal(v.score, 100);
  assert.equal(v.signature.split('|')[0], 'nrefs:var');
  // Only the worse reference for the second segment: below 100.
  assert.ok(corpusChrf(hyps, [['a cat sat', 'dogs run']]).score < 100);
});

test('characters are code points, as in Python: an emoji is one 1-gram; lowercase before counting', () => {
  const s = corpusChrf(['😀a'], ['😀b'], { charOrder: 1 });
  assert.deepEqual(s.statistics, [2, 2, 1]);
  assert.equal(corpusChrf(['ÄPFEL'], ['äpfel'], { lowercase: true }).score, 100);
  assert.ok(corpusChrf(['ÄPFEL'], ['äpfel']).score === 0);
});

test('bad input: streams of the wrong length, no reference, bad orders, named', () => {
  assert.throws(() => corpusChrf(['a', 'b'], ['a']), /chrF: reference stream 0 has 1 lines but there are 2 hypotheses/);
  assert.throws(() => corpusChrf(['a'], [[null]]), /chrF: segment 0 has no reference/);
  assert.throws(() => corpusChrf(['a'], ['a'], { charOrder: 0 }), /chrF: charOrder must be an integer >= 1, got 0/);
  assert.throws(() => corpusChrf(['a'], ['a'], { beta: 1.5 }), /chrF: beta must be an integer >= 1, got 1\.5/);
  assert.throws(() => corpusChrf(['a'], ['a'], { wordOrder: -1 }), /chrF: wordOrder must be an integer >= 0, got -1/);
});
