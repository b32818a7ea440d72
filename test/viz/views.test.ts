import assert from 'node:assert/strict';
import { test } from 'node:test';
import { nn } from '../../src/index.ts';
import { headViewSvg } from '../../src/viz/headview.ts';
import { lineChartSvg, niceTicks } from '../../src/viz/linechart.ts';
import { averageHeads, modelViewSvg } from '../../src/viz/modelview.ts';
import { positionalCurvesSvg, positionalEncoding, positionalHeatmapSvg } from '../../src/viz/positional.ts';
import { attentionSteps, concatHeads, multiHeadSteps, SEED_002, SEED_003, splitHeads } from '../../src/viz/steps.ts';

const count = (s: string, re: RegExp) => (s.match(re) ?? []).length;
const close = (a: number, b: number, tol = 5e-5) => assert.ok(Math.abs(a - b) <= tol, `${a} vs ${b}`);

test('head view: one line per (head, query, key) with positive weight, opacity = weight', () => {
  const h0 = [
    [1, 0],
    [0.25, 0.75],
    [0.5, 0.5],
  ];
  const h1 = [
    [0.5, 0.5],
    [0.5, 0.5],
    [0.9, 0.1],
  ];
  const svg = headViewSvg({ heads: [h0, h1], leftLabels: ['<s>', 'Ein', 'Hund'], rightLabels: ['A', 'dog'] });
  assert.equal(count(svg, /<line class="link"/g), 5 + 6);
  assert.ok(svg.includes('data-head="0" data-row="1" data-col="1"') && svg.includes('stroke-opacity="0.75"'));
  assert.equal(count(svg, /class="token"/g), 5);
  assert.ok(svg.includes('>&lt;s&gt;</text>'));
  assert.ok(svg.includes('head 1: Ein → dog: 0.7500'));
  const one = headViewSvg({
    heads: [h1],
    headIds: [3],
    leftLabels: ['a', 'b', 'c'],
    rightLabels: ['x', 'y'],
    highlight: 2,
  });
  assert.ok(one.includes('data-head="3"') && one.includes('>head 4</text>'));
  assert.throws(
    () => headViewSvg({ heads: [h0], leftLabels: ['a'], rightLabels: ['x', 'y'] }),
    /1 left labels for 3 query rows/,
  );
});

test('model view: layers × heads thumbnails with data attributes', () => {
  const m = (v: number) => [
    [v, 1 - v],
    [1 - v, v],
  ];
  const maps = [
    [m(0.1), m(0.2), m(0.3)],
    [m(0.4), m(0.5), m(0.6)],
  ];
  const svg = modelViewSvg({ maps, selected: { layer: 1, head: 2 } });
  assert.equal(count(svg, /<g class="thumb/g), 6);
  assert.ok(svg.includes('class="thumb selected" data-layer="1" data-head="2"'));
  assert.equal(count(svg, /class="layer-label"/g), 2);
  assert.equal(count(svg, /class="head-label"/g), 3);
  assert.deepEqual(averageHeads([m(0), m(1)]), [
    [0.5, 0.5],
    [0.5, 0.5],
  ]);
});

test('positional encoding: the seed-004 formula, equal to nn.PositionalEncoding', () => {
  const pe = positionalEncoding(50, 128);
  assert.equal(pe.length, 50);
  assert.equal(pe[0].length, 128);
  close(pe[3][0], Math.sin(3));
  close(pe[3][1], Math.cos(3));
  close(pe[7][10], Math.sin(7 / 10000 ** (10 / 128)));
  close(pe[7][11], Math.cos(7 / 10000 ** (10 / 128)));
  const layer = new nn.PositionalEncoding(128, { maxLen: 50 });
  const t = layer.pe.dataSync<Float32Array>();
  for (let i = 0; i < t.length; i++) close(pe[Math.floor(i / 128)][i % 128], t[i], 1e-5);
  const odd = positionalEncoding(4, 5);
  close(odd[2][4], Math.sin(2 / 10000 ** (4 / 5)));
  assert.throws(() => positionalEncoding(0, 4), /length must be a positive integer/);
});

test('positional heatmap and curves', () => {
  const svg = positionalHeatmapSvg({ length: 10, dModel: 16 });
  assert.equal(count(svg, /<rect class="cell/g), 160);
  assert.ok(svg.includes('>position</text>') && svg.includes('>dimension</text>'));
  // Position 0: sin(0) = 0 on even dims (white), cos(0) = 1 on odd dims (darkest blue).
  assert.ok(svg.includes('data-row="0" data-col="0" x="') && /data-row="0" data-col="0"[^>]*fill="#f7f7f7"/.test(svg));
  assert.ok(/data-row="0" data-col="1"[^>]*fill="#053061"/.test(svg));
  const curves = positionalCurvesSvg({ length: 50, dModel: 128 });
  assert.equal(count(curves, /<polyline class="series"/g), 5);
  assert.ok(curves.includes('data-label="position 40"'));
  const dims = positionalCurvesSvg({ length: 30, dModel: 16, mode: 'dimensions', dimensions: [0, 1] });
  assert.equal(count(dims, /<polyline class="series"/g), 2);
  const points = /<polyline class="series"[^>]*points="([^"]*)"/.exec(dims)![1];
  assert.equal(points.split(' ').length, 30, '30 points per curve');
});

test('line chart ticks', () => {
  assert.deepEqual(niceTicks(-1, 1, 4), [-1, -0.5, 0, 0.5, 1]);
  assert.deepEqual(niceTicks(0, 49, 8), [0, 10, 20, 30, 40]);
  assert.throws(
    () =>
      lineChartSvg({
        series: [
          { label: 'a', values: [1, 2] },
          { label: 'b', values: [1] },
        ],
      }),
    /series 1/,
  );
});

test('step by step: seed 003 gives 2.66 / 3.66 / 3.34 / 4.34', () => {
  const s = attentionSteps(SEED_003.q, SEED_003.k, SEED_003.v);
  assert.deepEqual(s.scores, [
    [1, 0],
    [0, 1],
  ]);
  close(s.factor, 1 / Math.SQRT2);
  // biome-ignore lint/suspicious/noApproximativeNumericConstant: the printed value, to 4 decimals.
  close(s.scaled[0][0], 0.7071);
  close(s.weights[0][0], 0.6698);
  close(s.weights[0][1], 0.3302);
  assert.deepEqual(
    s.output.map((r) => r.map((v) => v.toFixed(2))),
    [
      ['2.66', '3.66'],
      ['3.34', '4.34'],
    ],
  );
});

test('step by step: seed 002 scores, weights and context vectors to the printed 4 decimals', () => {
  const s = attentionSteps(SEED_002.q, SEED_002.k, SEED_002.v, { scale: false });
  const r4 = (m: number[][]) => m.map((r) => r.map((v) => v.toFixed(4)));
  assert.deepEqual(r4(s.scores)[1], ['0.9544', '1.4950', '1.4754', '0.8434', '0.7070', '1.0865']);
  assert.deepEqual(r4(s.weights)[1], ['0.1385', '0.2379', '0.2333', '0.1240', '0.1082', '0.1581']);
  assert.deepEqual(r4(s.output)[1], ['0.4419', '0.6515', '0.5683']);
  assert.deepEqual(r4(s.output)[0], ['0.4421', '0.5931', '0.5790']);
});

test('causal mask and multi-head split/concat', () => {
  const s = attentionSteps(SEED_003.q, SEED_003.k, SEED_003.v, { causal: true });
  assert.deepEqual(s.mask, [
    [false, true],
    [false, false],
  ]);
  assert.equal(s.masked[0][1], -Infinity);
  assert.deepEqual(s.weights[0], [1, 0]);
  assert.deepEqual(s.output[0], [2, 3]);
  const x = [
    [1, 2, 3, 4],
    [5, 6, 7, 8],
  ];
  assert.deepEqual(splitHeads(x, 2), [
    [
      [1, 2],
      [5, 6],
    ],
    [
      [3, 4],
      [7, 8],
    ],
  ]);
  assert.deepEqual(concatHeads(splitHeads(x, 2)), x);
  const mh = multiHeadSteps(SEED_003.q, SEED_003.k, SEED_003.v, 2);
  assert.equal(mh.heads.length, 2);
  assert.equal(mh.heads[0].dk, 1);
  assert.equal(mh.concat.length, 2);
  assert.equal(mh.concat[0].length, 2);
  assert.throws(() => splitHeads([[1, 2, 3]], 2), /3 columns do not split into 2 heads/);
});
