import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BLUES_STOPS, blues, luminance, rdbu } from '../../src/viz/color.ts';
import { heatmapSvg } from '../../src/viz/heatmap.ts';
import { formatValue } from '../../src/viz/svg.ts';

const count = (s: string, re: RegExp) => (s.match(re) ?? []).length;

/** Each cell of an SVG heatmap: its indices, title, fill, and printed value with its colour. */
function cells(
  svg: string,
): { row: number; col: number; title: string; fill: string; text?: string; textFill?: string }[] {
  const re =
    /<rect class="cell[^"]*" data-row="(\d+)" data-col="(\d+)"[^>]* fill="(#[0-9a-f]{6})"><title>([^<]*)<\/title><\/rect>(?:<text class="value"[^>]* fill="(#[0-9a-f]{6})"[^>]*>([^<]*)<\/text>)?/g;
  return [...svg.matchAll(re)].map((m) => ({
    row: Number(m[1]),
    col: Number(m[2]),
    fill: m[3],
    title: m[4],
    textFill: m[5],
    text: m[6],
  }));
}

// Issue 40: each cell's colour and value from the input numbers, worked by hand, not a golden SVG
// that the code wrote. The scale is ColorBrewer's 9-class Blues (stops copied from colorbrewer2.org:
// f7fbff deebf7 c6dbef 9ecae1 6baed6 4292c6 2171b5 08519c 08306b), evenly spaced on [min, max] and
// interpolated per channel in sRGB, rounded to the nearest integer. With t = (v − min) / (max − min),
// x = 8t, stop i = floor(x), f = x − i:
//   0.6698 (seed 003's softmax(QKᵀ/√2) weight): x = 5.3584, between 4292c6 (66,146,198) and 2171b5
//     (33,113,181), f = 0.3584: r = 66 − 33·0.3584 = 54.17 → 36, g = 146 − 33·0.3584 = 134.17 → 86,
//     b = 198 − 17·0.3584 = 191.91 → c0: #3686c0. WCAG luminance ≈ 0.216 < 0.3: white text.
//   0.3302: x = 2.6416, between c6dbef (198,219,239) and 9ecae1 (158,202,225), f = 0.6416:
//     r = 198 − 40·0.6416 = 172.34 → ac, g = 219 − 17·0.6416 = 208.09 → d0, b = 239 − 14·0.6416 =
//     230.02 → e6: #acd0e6; luminance ≈ 0.61: dark text (#1a1a1a).
//   0 → the first stop #f7fbff; 1 → the last #08306b (luminance ≈ 0.03: white text);
//   0.5: x = 4 exactly, the fifth stop #6baed6 (luminance ≈ 0.38: dark text).
//   With min −1, max 3: v = 1 gives t = 0.5 (#6baed6 again), v = −3 is clamped to t = 0 (#f7fbff).
test("each cell's colour, title and printed value follow from the input numbers (hand-worked Blues)", () => {
  const svg = heatmapSvg({
    values: [
      [0.6698, 0.3302, 0],
      [1, 0.5, 0.3302],
    ],
    rowLabels: ['The', 'cat'],
    colLabels: ['The', 'cat', 'sat'],
    min: 0,
    max: 1,
    legend: false,
  });
  assert.deepEqual(cells(svg), [
    { row: 0, col: 0, title: 'The → The: 0.6698', fill: '#3686c0', text: '0.67', textFill: '#ffffff' },
    { row: 0, col: 1, title: 'The → cat: 0.3302', fill: '#acd0e6', text: '0.33', textFill: '#1a1a1a' },
    { row: 0, col: 2, title: 'The → sat: 0.0000', fill: '#f7fbff', text: '0.00', textFill: '#1a1a1a' },
    { row: 1, col: 0, title: 'cat → The: 1.0000', fill: '#08306b', text: '1.00', textFill: '#ffffff' },
    { row: 1, col: 1, title: 'cat → cat: 0.5000', fill: '#6baed6', text: '0.50', textFill: '#1a1a1a' },
    { row: 1, col: 2, title: 'cat → sat: 0.3302', fill: '#acd0e6', text: '0.33', textFill: '#1a1a1a' },
  ]);
  const shifted = heatmapSvg({ values: [[1, -3]], min: -1, max: 3, legend: false });
  assert.deepEqual(
    cells(shifted).map((c) => c.fill),
    ['#6baed6', '#f7fbff'],
  );
  // The cells tile the grid row by row (32 px each by default, the first at x 30, y 8 here).
  assert.match(svg, /data-row="1" data-col="2" x="94" y="40" width="32" height="32"/);
});

test('cells = rows × cols, with row/col indices', () => {
  const rows = 3;
  const cols = 5;
  const values = Array.from({ length: rows }, (_, i) => Array.from({ length: cols }, (_, j) => (i + j) / 10));
  const svg = heatmapSvg({ values });
  assert.equal(count(svg, /<rect class="cell/g), rows * cols);
  for (let i = 0; i < rows; i++)
    for (let j = 0; j < cols; j++) assert.ok(svg.includes(`data-row="${i}" data-col="${j}"`));
  assert.match(svg, /data-rows="3" data-cols="5"/);
});

test('token labels on both axes, escaped', () => {
  const svg = heatmapSvg({
    values: [
      [0.5, 0.5],
      [1, 0],
    ],
    rowLabels: ['<s>', '▁Ein'],
    colLabels: ['▁A', 'dog&cat'],
    xLabel: 'key',
    yLabel: 'query',
    title: 'Layer 1 · head 2',
  });
  assert.equal(count(svg, /class="row-label"/g), 2);
  assert.equal(count(svg, /class="col-label"/g), 2);
  assert.ok(svg.includes('>&lt;s&gt;</text>'));
  assert.ok(svg.includes('>▁Ein</text>'));
  assert.ok(svg.includes('>▁A</text>'));
  assert.ok(svg.includes('>dog&amp;cat</text>'));
  assert.ok(
    svg.includes('class="x-label"') && svg.includes('class="y-label"') && svg.includes('>Layer 1 · head 2</text>'),
  );
  assert.ok(!svg.includes('<s>'), 'raw < must not leak into the SVG');
});

test('values in titles (4 decimals) and in cells (2 decimals by default)', () => {
  const svg = heatmapSvg({ values: [[0.123456, 0.876544]], rowLabels: ['q'], colLabels: ['a', 'b'] });
  assert.ok(svg.includes('<title>q → a: 0.1235</title>'));
  assert.ok(svg.includes('<title>q → b: 0.8765</title>'));
  assert.ok(svg.includes('>0.12</text>') && svg.includes('>0.88</text>'));
  const small = heatmapSvg({ values: [[0.5]], cellSize: 10 });
  assert.ok(!small.includes('class="value"'), 'no printed values in small cells');
  assert.ok(small.includes('0.5000</title>'), 'titles stay');
});

test('colour scale: Blues lightness falls monotonically with the value; the map follows it', () => {
  let prev = Infinity;
  for (let k = 0; k <= 200; k++) {
    const l = luminance(blues(k / 200));
    assert.ok(l <= prev + 1e-12, `luminance rises at t = ${k / 200}`);
    prev = l;
  }
  assert.equal(blues(0), BLUES_STOPS[0]);
  assert.equal(blues(1), BLUES_STOPS[BLUES_STOPS.length - 1]);
  assert.equal(blues(-3), blues(0));
  assert.equal(blues(7), blues(1));
  const values = [[0, 0.1, 0.25, 0.5, 0.75, 0.9, 1]];
  const svg = heatmapSvg({ values, min: 0, max: 1 });
  const fills = [...svg.matchAll(/<rect class="cell"[^>]*fill="(#[0-9a-f]{6})"/g)].map((m) => luminance(m[1]));
  assert.equal(fills.length, 7);
  for (let j = 1; j < fills.length; j++) assert.ok(fills[j] < fills[j - 1], 'darker for larger weights');
});

test('RdBu: red below, near-white at 0, blue above', () => {
  const [r0, , b0] = [parseInt(rdbu(0).slice(1, 3), 16), 0, parseInt(rdbu(0).slice(5, 7), 16)];
  const [r1, , b1] = [parseInt(rdbu(1).slice(1, 3), 16), 0, parseInt(rdbu(1).slice(5, 7), 16)];
  assert.ok(r0 > b0 && b1 > r1);
  assert.equal(rdbu(0.5), '#f7f7f7');
});

test('masked cells are grey and say so', () => {
  const svg = heatmapSvg({
    values: [
      [1, 0],
      [0.4, 0.6],
    ],
    rowLabels: ['a', 'b'],
    colLabels: ['a', 'b'],
    masked: (i, j) => j > i,
  });
  assert.equal(count(svg, /class="cell masked"/g), 1);
  assert.ok(svg.includes('a → b: 0.0000 (masked)'));
  assert.equal(count(svg, /class="value"/g), 3, 'no value printed in the masked cell');
});

test('domain defaults to the data range; a colour bar is drawn', () => {
  const svg = heatmapSvg({ values: [[-2, 0, 2]], digits: 1 });
  assert.ok(svg.includes('<g class="legend">'));
  assert.ok(svg.includes('>2.0</text>') && svg.includes('>-2.0</text>'));
});

test('bad input gives a clear error', () => {
  assert.throws(() => heatmapSvg({ values: [] }), /non-empty/);
  assert.throws(() => heatmapSvg({ values: [[1, 2], [3]] }), /row 1 has 1 values, row 0 has 2/);
  assert.throws(() => heatmapSvg({ values: [[1, 2]], colLabels: ['x'] }), /1 column labels for 2 columns/);
});

test('formatValue', () => {
  assert.equal(formatValue(2.6605, 2), '2.66');
  assert.equal(formatValue(-0.0001, 2), '0.00');
  assert.equal(formatValue(-Infinity), '−∞');
});
