/**
 * The pictures a page draws in pieces (issue 63): heatmapPieces, headViewPieces, and the model view without its
 * cells plus thumbPixels. Each must give, piece by piece, exactly what the one-piece SVG has: the pieces join to
 * heatmapSvg / headViewSvg, every piece holds whole rows, and the numbers a page paints on a canvas (a cell's
 * fill and title, a line's ends, colour, opacity and width, a thumbnail's pixels) are those of the SVG's elements.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseHex } from '../../src/viz/color.ts';
import { HEATMAP_CELLS_PER_PIECE, heatmapPieces, heatmapSvg } from '../../src/viz/heatmap.ts';
import { HEADVIEW_PAIRS_PER_PIECE, headViewPieces, headViewSvg } from '../../src/viz/headview.ts';
import { modelViewRows, modelViewSvg, thumbPixels } from '../../src/viz/modelview.ts';
import { joinPieces } from '../../src/viz/svg.ts';

let seed = 7;
/** A seeded uniform in [0, 1) (Park–Miller). */
const rand = () => {
  seed = (seed * 16807) % 2147483647;
  return seed / 2147483647;
};
const matrix = (rows: number, cols: number) =>
  Array.from({ length: rows }, () => Array.from({ length: cols }, () => rand()));
const labels = (n: number, p: string) => Array.from({ length: n }, (_, i) => `${p}<${i}>`);
const unescapeXml = (s: string) =>
  s
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&amp;/g, '&');

/** The attributes of every element `tag` of class `cls` in `svg`, in order, with its <title> text. */
function elements(svg: string, tag: string, cls: string): Record<string, string>[] {
  const re = new RegExp(`<${tag} class="${cls}[^"]*"([^>]*?)(/>|>(?:<title>(.*?)</title>)?</${tag}>)`, 'g');
  return [...svg.matchAll(re)].map((m) => {
    const a: Record<string, string> = {};
    for (const [, k, v] of m[1].matchAll(/([\w-]+)="([^"]*)"/g)) a[k] = v;
    if (m[3] !== undefined) a.title = unescapeXml(m[3]);
    return a;
  });
}

test('heatmapPieces: pieces of whole rows join to heatmapSvg; the grid gives each rect its fill and title', () => {
  for (const [rows, cols] of [
    [1, 1],
    [7, 3],
    [121, 121],
    [40, 1500],
  ]) {
    const o = {
      values: matrix(rows, cols),
      rowLabels: labels(rows, 'q'),
      colLabels: labels(cols, 'k'),
      title: 'a & b',
      masked: (i: number, j: number) => j > i,
      min: 0,
      max: 1,
    };
    const p = heatmapPieces(o);
    const svg = heatmapSvg(o);
    assert.equal(joinPieces(p), svg);
    assert.equal(p.container, 'g.cells');
    assert.ok(p.before.endsWith('<g class="cells">'));
    const perPiece = Math.max(1, Math.floor(HEATMAP_CELLS_PER_PIECE / cols));
    assert.equal(p.count, Math.ceil(rows / perPiece));
    assert.equal(p.grid.rowsPerPiece, perPiece);
    for (let k = 0; k < p.count; k++) {
      const cells = elements(p.piece(k), 'rect', 'cell');
      const first = k * perPiece;
      assert.equal(cells.length, (Math.min(rows, first + perPiece) - first) * cols, `piece ${k} holds whole rows`);
      assert.equal(cells[0]['data-row'], String(first));
    }
    const all = elements(svg, 'rect', 'cell');
    assert.equal(all.length, rows * cols);
    for (const c of all) {
      const [i, j] = [Number(c['data-row']), Number(c['data-col'])];
      assert.equal(p.grid.fill(i, j), c.fill, `fill of (${i}, ${j})`);
      assert.equal(p.grid.title(i, j), c.title, `title of (${i}, ${j})`);
      assert.equal(Number(c.x), p.grid.left + j * p.grid.cellWidth);
      assert.equal(Number(c.y), p.grid.top + i * p.grid.cellHeight);
    }
  }
});

test("headViewPieces: pieces join to headViewSvg; each piece's links are its <line>s, number for number", () => {
  for (const [rows, cols, highlight] of [
    [1, 1, null],
    [5, 9, 2],
    [121, 121, null],
  ] as const) {
    const heads = [matrix(rows, cols), matrix(rows, cols).map((r) => r.map((v, j) => (j % 3 === 0 ? 0 : v)))];
    const o = {
      heads,
      headIds: [1, 3],
      leftLabels: labels(rows, 'q'),
      rightLabels: labels(cols, 'k'),
      title: 'layer 1',
      highlight,
    };
    const p = headViewPieces(o);
    const svg = headViewSvg(o);
    assert.equal(joinPieces(p), svg);
    assert.equal(p.lines, 2 * rows * cols);
    assert.equal(p.count, Math.ceil((2 * rows) / Math.max(1, Math.floor(HEADVIEW_PAIRS_PER_PIECE / cols))));
    if (2 * rows * cols <= HEADVIEW_PAIRS_PER_PIECE) assert.equal(p.count, 1, 'a small head view is one piece');
    for (let k = 0; k < p.count; k++) {
      const lines = elements(p.piece(k), 'line', 'link');
      const links = p.links(k);
      assert.equal(lines.length, links.length);
      lines.forEach((l, n) => {
        const x = links[n];
        assert.deepEqual(
          [l['data-head'], l['data-row'], l['data-col'], l.x1, l.y1, l.x2, l.y2, l.stroke],
          [x.head, x.row, x.col, x.x1, x.y1, x.x2, x.y2, x.stroke].map(String),
        );
        assert.equal(Number(l['stroke-opacity']), x.opacity);
        assert.equal(Number(l['stroke-width']), x.width);
        assert.equal(x.value, heads[x.head === 1 ? 0 : 1][x.row][x.col]);
        assert.ok(x.value > 0, 'no line for a weight of 0');
      });
    }
    const all = elements(svg, 'line', 'link');
    assert.equal(
      all.length,
      Array.from({ length: p.count }, (_, k) => p.links(k).length).reduce((a, b) => a + b),
    );
  }
});

test('the model view without cells keeps every thumbnail and frame; thumbPixels are its rects, a pixel each', () => {
  const maps = [0, 1].map(() => [0, 1, 2].map(() => matrix(13, 9).map((r) => r.map((v, j) => (j === 4 ? NaN : v)))));
  for (const extra of [{}, { masked: (i: number, j: number) => j > i, selected: { layer: 1, head: 2 } }]) {
    const o = { maps, title: 'model', ...extra };
    const full = modelViewSvg(o);
    const frame = modelViewSvg({ ...o, cells: false });
    assert.equal((frame.match(/<g class="thumb/g) ?? []).length, 6);
    assert.equal((frame.match(/<rect x=/g) ?? []).length, 0, 'no cell');
    assert.equal((frame.match(/class="frame"[^>]*pointer-events="all"/g) ?? []).length, 6, 'frames take the clicks');
    // The frame picture is the full one less the cells and the frames' pointer-events.
    assert.equal(frame.replace(/ pointer-events="all"/g, ''), full.replace(/<rect x="[^"]*" y="[^>]*\/>/g, ''));
    for (let l = 0; l < 2; l++)
      for (let h = 0; h < 3; h++) {
        const g = full.slice(full.indexOf(`data-layer="${l}" data-head="${h}"`));
        const fills = [...g.slice(0, g.indexOf('class="frame"')).matchAll(/<rect x[^>]*fill="(#[0-9a-f]{6})"/g)];
        const px = thumbPixels(o, l, h);
        assert.deepEqual([px.width, px.height, fills.length], [9, 13, 9 * 13]);
        fills.forEach((f, k) => {
          assert.deepEqual([...px.data.subarray(4 * k, 4 * k + 4)], [...parseHex(f[1]), 255], `pixel ${k}`);
        });
      }
  }
});

test('modelViewRows: a shell without layers, and rows (a label and thumbnails each) that rejoin to the picture', () => {
  const maps = [0, 1, 2].map(() => [0, 1].map(() => matrix(5, 5)));
  for (const cells of [true, false]) {
    const svg = modelViewSvg({ maps, title: 'model', cells, selected: { layer: 2, head: 1 } });
    const { shell, rows } = modelViewRows(svg);
    assert.equal(rows.length, 3);
    assert.ok(shell.endsWith('</svg>') && !shell.includes('layer-label') && !shell.includes('class="thumb'));
    assert.equal((shell.match(/class="head-label"/g) ?? []).length, 2, 'the head labels in the shell');
    rows.forEach((r, l) => {
      assert.ok(r.startsWith('<text class="layer-label"'), `row ${l} starts with its label`);
      assert.ok(r.includes(`>layer ${l + 1}</text>`));
      assert.deepEqual(
        [...r.matchAll(/<g class="thumb[^"]*" data-layer="(\d+)" data-head="(\d+)"/g)].map((m) => `${m[1]}/${m[2]}`),
        [`${l}/0`, `${l}/1`],
      );
    });
    assert.equal(shell.replace('</svg>', `${rows.join('')}</svg>`), svg);
  }
});
