/**
 * The attention heatmap: one cell per (query, key) pair, coloured by its weight, with the tokens on
 * both axes (queries down the left, keys along the bottom), the exact value in each cell's <title>
 * (shown on hover), optionally printed in the cell, and a colour bar. Returns an SVG string.
 */
import { blues, scaleByName, textColorOn, type ColorScale, type ScaleName } from './color.ts';
import {
  chartOpening,
  checkMatrix,
  esc,
  finiteRange,
  formatValue,
  joinPieces,
  maxTextWidth,
  px,
  type SvgPieces,
} from './svg.ts';

export interface HeatmapOptions {
  /** rows × cols values: row i = query i, column j = key j. */
  values: readonly (readonly number[])[];
  /** One per row (query tokens). Default: 0, 1, 2, … */
  rowLabels?: readonly string[];
  /** One per column (key tokens). Default: 0, 1, 2, … */
  colLabels?: readonly string[];
  /** Heading above the map. */
  title?: string;
  /** Name of the horizontal axis, e.g. 'key (attended to)'. */
  xLabel?: string;
  /** Name of the vertical axis, e.g. 'query (attending)'. */
  yLabel?: string;
  /** Bottom of the colour scale (default: the smallest finite value; attention weights use 0 and 1). */
  min?: number;
  /** Top of the colour scale (default: the largest finite value). */
  max?: number;
  /** 'blues' (default, sequential), 'rdbu' (diverging), or any t ∈ [0, 1] → colour function. */
  scale?: ScaleName | ColorScale;
  /** Side of a cell in px (default 32). */
  cellSize?: number;
  /** Width of a cell in px when not square (default cellSize). */
  cellWidth?: number;
  /** Height of a cell in px (default cellSize). */
  cellHeight?: number;
  /** Print each value in its cell (default: when cells are at least 26 px). */
  showValues?: boolean;
  /** Decimals printed in cells (default 2). */
  digits?: number;
  /** Decimals in the hover titles (default 4). */
  titleDigits?: number;
  /** Hover titles on cells (default true; false keeps very large maps small). */
  titles?: boolean;
  /** Cells to draw as masked (blocked before the softmax): grey, no value printed, titled "masked". */
  masked?: (row: number, col: number) => boolean;
  /** Colour bar at the right (default true). */
  legend?: boolean;
  /** Label every n-th row / column only (default: every one when cells are ≥ 12 px, else about one per 12 px). */
  labelEvery?: number;
  /** Background fill (default white, so PNG exports are not transparent); null for none. */
  background?: string | null;
  /** Extra class names on the root <svg>. */
  className?: string;
}

export const MASKED_FILL = '#d9d9d9';
const FONT = 12;

/** Every `every`-th index, and the last one when it does not crowd the one before. */
function labelled(n: number, every: number): (i: number) => boolean {
  return (i) => every <= 1 || i % every === 0 || (i === n - 1 && (n - 1) % every > every / 2);
}

/** Cells in one piece of {@link heatmapPieces} (each a <rect> with its <title>): a few ms of a page's frame. */
export const HEATMAP_CELLS_PER_PIECE = 1000;

export function heatmapSvg(o: HeatmapOptions): string {
  return joinPieces(heatmapPieces(o));
}

/** The heatmap's cells as numbers, for a page that paints a long map on a canvas. */
export interface HeatmapGrid {
  rows: number;
  cols: number;
  /** The cells' top-left corner and a cell's size, in px of the picture. */
  left: number;
  top: number;
  cellWidth: number;
  cellHeight: number;
  /** Rows in each piece (piece k: rows k · rowsPerPiece onwards). */
  rowsPerPiece: number;
  /** Whether values are printed in the cells (then the cells are best left as SVG). */
  showValues: boolean;
  /** Cell (i, j)'s fill, as its <rect> has it. */
  fill(i: number, j: number): string;
  /** Cell (i, j)'s <title> text: its tokens and value. */
  title(i: number, j: number): string;
}

/** {@link heatmapSvg} in pieces, with its cells as numbers (`grid`). */
export interface HeatmapPieces extends SvgPieces {
  grid: HeatmapGrid;
}

/** {@link heatmapSvg} in pieces of whole rows (about HEATMAP_CELLS_PER_PIECE cells each), in `g.cells`. */
export function heatmapPieces(o: HeatmapOptions): HeatmapPieces {
  const { rows, cols } = checkMatrix(o.values, 'heatmapSvg');
  const rowLabels = o.rowLabels ?? Array.from({ length: rows }, (_, i) => String(i));
  const colLabels = o.colLabels ?? Array.from({ length: cols }, (_, i) => String(i));
  if (rowLabels.length !== rows) throw new Error(`heatmapSvg: ${rowLabels.length} row labels for ${rows} rows`);
  if (colLabels.length !== cols) throw new Error(`heatmapSvg: ${colLabels.length} column labels for ${cols} columns`);
  const [dataMin, dataMax] = finiteRange(o.values);
  const lo = o.min ?? dataMin;
  const hi = o.max ?? dataMax;
  if (!(hi >= lo)) throw new Error(`heatmapSvg: max ${hi} is below min ${lo}`);
  const color = o.scale === undefined ? blues : scaleByName(o.scale);
  const cell = o.cellSize ?? 32;
  const cw = o.cellWidth ?? cell;
  const ch = o.cellHeight ?? cell;
  if (!(cw > 0) || !(ch > 0)) throw new Error(`heatmapSvg: cell sizes must be positive, got ${cw} × ${ch}`);
  const digits = o.digits ?? 2;
  const titleDigits = o.titleDigits ?? 4;
  const showValues = o.showValues ?? Math.min(cw, ch) >= 26;
  const titles = o.titles ?? true;
  const legend = o.legend ?? true;
  const rowEvery = o.labelEvery ?? Math.max(1, Math.ceil(12 / ch));
  const colEvery = o.labelEvery ?? Math.max(1, Math.ceil(12 / cw));
  const rowShown = labelled(rows, rowEvery);
  const colShown = labelled(cols, colEvery);
  const t = (v: number) => (hi === lo ? 0.5 : (v - lo) / (hi - lo));

  const rowW = maxTextWidth(
    rowLabels.filter((_, i) => rowShown(i)),
    FONT,
  );
  const colW = maxTextWidth(
    colLabels.filter((_, i) => colShown(i)),
    FONT,
  );
  const colVertical = colW > cw * colEvery - 4;
  const left = Math.ceil((o.yLabel ? 20 : 0) + rowW + 8);
  const top = o.title ? 28 : 8;
  const gw = cols * cw;
  const gh = rows * ch;
  const colBand = colVertical ? colW + 8 : FONT + 8;
  const bottom = top + gh + colBand + (o.xLabel ? 20 : 0) + 4;
  const legendW = legend ? 16 + 12 + 6 + maxTextWidth([formatValue(lo, digits), formatValue(hi, digits)], 11) : 0;
  const titleW = o.title ? 8 + maxTextWidth([o.title], 14) * 1.12 : 0;
  const width = Math.ceil(Math.max(left + gw + legendW + 8, titleW + 8));
  const height = Math.ceil(Math.max(bottom, top + 70));

  const out = chartOpening(
    'qkv-heatmap',
    width,
    height,
    `font-size="${FONT}" data-rows="${rows}" data-cols="${cols}"`,
    o,
  );

  out.push(`<g class="cells">`);
  const before = out.join('');
  out.length = 0;
  const fillOf = (i: number, j: number) => {
    const v = o.values[i][j];
    return (o.masked?.(i, j) ?? false) ? MASKED_FILL : Number.isFinite(v) ? color(t(v)) : MASKED_FILL;
  };
  const titleOf = (i: number, j: number) =>
    `${rowLabels[i]} → ${colLabels[j]}: ${formatValue(o.values[i][j], titleDigits)}` +
    `${(o.masked?.(i, j) ?? false) ? ' (masked)' : ''}`;
  const drawCell = (i: number, j: number, into: string[]) => {
    const v = o.values[i][j];
    const isMasked = o.masked?.(i, j) ?? false;
    const fill = fillOf(i, j);
    const x = left + j * cw;
    const y = top + i * ch;
    const title = titles
      ? `<title>${esc(rowLabels[i])} → ${esc(colLabels[j])}: ` +
        `${formatValue(v, titleDigits)}${isMasked ? ' (masked)' : ''}</title>`
      : '';
    into.push(
      `<rect class="cell${isMasked ? ' masked' : ''}" data-row="${i}" ` +
        `data-col="${j}" x="${px(x)}" y="${px(y)}" width="${px(cw)}" ` +
        `height="${px(ch)}" fill="${fill}">${title}</rect>`,
    );
    if (showValues && !isMasked) {
      const fs = Math.min(11, Math.max(6, Math.floor(Math.min(cw, ch) * 0.34)));
      into.push(
        `<text class="value" x="${px(x + cw / 2)}" y="${px(y + ch / 2)}" ` +
          `font-size="${fs}" text-anchor="middle" dominant-baseline="central" ` +
          `fill="${textColorOn(fill)}" ` +
          `pointer-events="none">${formatValue(v, digits)}</text>`,
      );
    }
  };
  const rowsPerPiece = Math.max(1, Math.floor(HEATMAP_CELLS_PER_PIECE / cols));
  out.push(`</g>`);

  out.push(`<g class="row-labels" text-anchor="end" dominant-baseline="central">`);
  for (let i = 0; i < rows; i++) {
    if (rowShown(i))
      out.push(`<text class="row-label" x="${left - 6}" y="${px(top + (i + 0.5) * ch)}">${esc(rowLabels[i])}</text>`);
  }
  out.push(`</g>`);
  out.push(
    `<g class="col-labels"${colVertical ? ' text-anchor="end" dominant-baseline="central"' : ' text-anchor="middle"'}>`,
  );
  for (let j = 0; j < cols; j++) {
    if (!colShown(j)) continue;
    const x = px(left + (j + 0.5) * cw);
    const y = top + gh + 6;
    out.push(
      colVertical
        ? `<text class="col-label" x="${x}" y="${y}" transform="rotate(-90 ${x} ${y})">${esc(colLabels[j])}</text>`
        : `<text class="col-label" x="${x}" y="${y + FONT}">${esc(colLabels[j])}</text>`,
    );
  }
  out.push(`</g>`);
  if (o.xLabel)
    out.push(
      `<text class="x-label" x="${px(left + gw / 2)}" ` +
        `y="${px(top + gh + colBand + 14)}" text-anchor="middle" ` +
        `fill="#555">${esc(o.xLabel)}</text>`,
    );
  if (o.yLabel) {
    const cy = px(top + gh / 2);
    out.push(
      `<text class="y-label" x="12" y="${cy}" text-anchor="middle" ` +
        `fill="#555" transform="rotate(-90 12 ${cy})">${esc(o.yLabel)}</text>`,
    );
  }
  if (legend) out.push(colorBar(left + gw + 16, top, Math.max(60, Math.min(gh, 240)), lo, hi, color, digits));
  out.push(`</svg>`);
  return {
    before,
    after: out.join(''),
    container: 'g.cells',
    count: Math.ceil(rows / rowsPerPiece),
    grid: {
      rows,
      cols,
      left,
      top,
      cellWidth: cw,
      cellHeight: ch,
      rowsPerPiece,
      showValues,
      fill: fillOf,
      title: titleOf,
    },
    piece(k) {
      const into: string[] = [];
      for (let i = k * rowsPerPiece; i < Math.min(rows, (k + 1) * rowsPerPiece); i++)
        for (let j = 0; j < cols; j++) drawCell(i, j, into);
      return into.join('');
    },
  };
}

/** A vertical colour bar (max at the top) made of bands, no gradient ids (so many SVGs can share a page). */
export function colorBar(
  x: number,
  y: number,
  h: number,
  lo: number,
  hi: number,
  color: ColorScale,
  digits = 2,
): string {
  const bands = 24;
  const parts = [`<g class="legend">`];
  for (let b = 0; b < bands; b++) {
    const tTop = 1 - b / bands;
    parts.push(
      `<rect x="${px(x)}" y="${px(y + (b * h) / bands)}" width="12" ` +
        `height="${px(h / bands + 0.5)}" fill="${color(tTop - 0.5 / bands)}"/>`,
    );
  }
  parts.push(
    `<rect x="${px(x)}" y="${px(y)}" width="12" height="${px(h)}" fill="none" stroke="#999" stroke-width="0.5"/>`,
  );
  const mid = (lo + hi) / 2;
  for (const [v, yy] of [
    [hi, y],
    [mid, y + h / 2],
    [lo, y + h],
  ] as const) {
    parts.push(
      `<text x="${px(x + 16)}" y="${px(yy)}" font-size="11" ` +
        `dominant-baseline="central">${formatValue(v, digits)}</text>`,
    );
  }
  parts.push(`</g>`);
  return parts.join('');
}
