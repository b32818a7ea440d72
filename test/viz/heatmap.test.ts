import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BLUES_STOPS, blues, luminance, rdbu } from '../../src/viz/color.ts';
import { heatmapSvg } from '../../src/viz/heatmap.ts';
import { formatValue } from '../../src/viz/svg.ts';

const count = (s: string, re: RegExp) => (s.match(re) ?? []).length;

// Seed 003's weights softmax(QKᵀ/√2) for "The cat", drawn with legend off: the whole picture.
const EXPECTED_2X2 =
  '<svg xmlns="http://www.w3.org/2000/svg" class="qkv-heatmap" width="102" height="96" viewBox="0 0 102 96" font-family="system-ui, sans-serif" font-size="12" data-rows="2" data-cols="2" role="img">' +
  '<rect class="background" width="102" height="96" fill="#ffffff"/>' +
  '<g class="cells">' +
  '<rect class="cell" data-row="0" data-col="0" x="30" y="8" width="32" height="32" fill="#3686c0"><title>The → The: 0.6698</title></rect>' +
  '<text class="value" x="46" y="24" font-size="10" text-anchor="middle" dominant-baseline="central" fill="#ffffff" pointer-events="none">0.67</text>' +
  '<rect class="cell" data-row="0" data-col="1" x="62" y="8" width="32" height="32" fill="#acd0e6"><title>The → cat: 0.3302</title></rect>' +
  '<text class="value" x="78" y="24" font-size="10" text-anchor="middle" dominant-baseline="central" fill="#1a1a1a" pointer-events="none">0.33</text>' +
  '<rect class="cell" data-row="1" data-col="0" x="30" y="40" width="32" height="32" fill="#acd0e6"><title>cat → The: 0.3302</title></rect>' +
  '<text class="value" x="46" y="56" font-size="10" text-anchor="middle" dominant-baseline="central" fill="#1a1a1a" pointer-events="none">0.33</text>' +
  '<rect class="cell" data-row="1" data-col="1" x="62" y="40" width="32" height="32" fill="#3686c0"><title>cat → cat: 0.6698</title></rect>' +
  '<text class="value" x="78" y="56" font-size="10" text-anchor="middle" dominant-baseline="central" fill="#ffffff" pointer-events="none">0.67</text>' +
  '</g>' +
  '<g class="row-labels" text-anchor="end" dominant-baseline="central"><text class="row-label" x="24" y="24">The</text><text class="row-label" x="24" y="56">cat</text></g>' +
  '<g class="col-labels" text-anchor="middle"><text class="col-label" x="46" y="90">The</text><text class="col-label" x="78" y="90">cat</text></g>' +
  '</svg>';

test('2×2 example: exact SVG', () => {
  const svg = heatmapSvg({ values: [[0.6698, 0.3302], [0.3302, 0.6698]], rowLabels: ['The', 'cat'], colLabels: ['The', 'cat'], min: 0, max: 1, legend: false });
  assert.equal(svg, EXPECTED_2X2);
});

test('cells = rows × cols, with row/col indices', () => {
  const rows = 3;
  const cols = 5;
  const values = Array.from({ length: rows }, (_, i) => Array.from({ length: cols }, (_, j) => (i + j) / 10));
  const svg = heatmapSvg({ values });
  assert.equal(count(svg, /<rect class="cell/g), rows * cols);
  for (let i = 0; i < rows; i++) for (let j = 0; j < cols; j++) assert.ok(svg.includes(`data-row="${i}" data-col="${j}"`));
  assert.match(svg, /data-rows="3" data-cols="5"/);
});

test('token labels on both axes, escaped', () => {
  const svg = heatmapSvg({ values: [[0.5, 0.5], [1, 0]], rowLabels: ['<s>', '▁Ein'], colLabels: ['▁A', 'dog&cat'], xLabel: 'key', yLabel: 'query', title: 'Layer 1 · head 2' });
  assert.equal(count(svg, /class="row-label"/g), 2);
  assert.equal(count(svg, /class="col-label"/g), 2);
  assert.ok(svg.includes('>&lt;s&gt;</text>'));
  assert.ok(svg.includes('>▁Ein</text>'));
  assert.ok(svg.includes('>▁A</text>'));
  assert.ok(svg.includes('>dog&amp;cat</text>'));
  assert.ok(svg.includes('class="x-label"') && svg.includes('class="y-label"') && svg.includes('>Layer 1 · head 2</text>'));
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
  const svg = heatmapSvg({ values: [[1, 0], [0.4, 0.6]], rowLabels: ['a', 'b'], colLabels: ['a', 'b'], masked: (i, j) => j > i });
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
