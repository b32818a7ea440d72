/**
 * The sinusoidal positional encoding of §3.5 (seed 004), as numbers and as pictures:
 *   PE(pos, 2i) = sin(pos / 10000^(2i/dModel)),  PE(pos, 2i+1) = cos(pos / 10000^(2i/dModel)).
 * The same table as nn.PositionalEncoding (an odd dModel keeps a last sine column), in float64.
 */
import { heatmapSvg } from './heatmap.ts';
import { lineChartSvg, type Series } from './linechart.ts';

function checkSize(name: string, v: number): void {
  if (!Number.isInteger(v) || v < 1)
    throw new Error(`positionalEncoding: ${name} must be a positive integer, got ${v}`);
}

/** The (length × dModel) table: row = position, column = dimension. */
export function positionalEncoding(length: number, dModel: number): number[][] {
  checkSize('length', length);
  checkSize('dModel', dModel);
  const freq = Array.from({ length: dModel }, (_, k) => Math.exp(-(k - (k % 2)) * (Math.log(10000) / dModel)));
  return Array.from({ length }, (_, pos) => freq.map((f, k) => (k % 2 === 0 ? Math.sin(pos * f) : Math.cos(pos * f))));
}

/** Options of {@link positionalHeatmapSvg}. */
export interface PositionalHeatmapOptions {
  /** Positions drawn (rows), 0 .. length − 1. */
  length: number;
  /** d_model: dimensions drawn (columns). */
  dModel: number;
  /** Cell width in px (default: about 640 px in all, between 2 and 24 a cell). */
  cellWidth?: number;
  /** Cell height in px (default: about 320 px in all, between 2 and 24 a cell). */
  cellHeight?: number;
  /** Heading (default names the length and dModel). */
  title?: string;
}

/** Seed 004's picture: positions down, dimensions across, red −1 … white 0 … blue +1 (RdBu). */
export function positionalHeatmapSvg(o: PositionalHeatmapOptions): string {
  const pe = positionalEncoding(o.length, o.dModel);
  const cw = o.cellWidth ?? Math.max(2, Math.min(24, Math.floor(640 / o.dModel)));
  const ch = o.cellHeight ?? Math.max(2, Math.min(24, Math.floor(320 / o.length)));
  return heatmapSvg({
    values: pe,
    rowLabels: pe.map((_, i) => String(i)),
    colLabels: pe[0].map((_, j) => String(j)),
    title: o.title ?? `Positional encoding (length ${o.length}, dModel ${o.dModel})`,
    xLabel: 'dimension',
    yLabel: 'position',
    min: -1,
    max: 1,
    scale: 'rdbu',
    cellWidth: cw,
    cellHeight: ch,
    showValues: Math.min(cw, ch) >= 30,
    titles: o.length * o.dModel <= 20000,
    className: 'qkv-positional',
  });
}

/** Options of {@link positionalCurvesSvg}. */
export interface PositionalCurvesOptions {
  /** Positions in the table, 0 .. length − 1. */
  length: number;
  /** d_model: dimensions in the table. */
  dModel: number;
  /**
   * 'positions' (seed 004's second plot): one curve per position in `positions`, over the first
   * `dims` dimensions. 'dimensions': one curve per dimension in `dimensions`, over the positions.
   */
  mode?: 'positions' | 'dimensions';
  /** 'positions' mode: the positions drawn (default 0, 10, 20, 30, 40; those outside the table are left out). */
  positions?: readonly number[];
  /** 'positions' mode: how many leading dimensions each curve spans (default 50, at most dModel). */
  dims?: number;
  /** 'dimensions' mode: the dimensions drawn (default 4, 5, 6, 7; those outside the table are left out). */
  dimensions?: readonly number[];
  /** Heading (default says what is drawn). */
  title?: string;
}

/**
 * The encoding as curves (a line chart SVG string), across dimensions or across positions; throws
 * if no requested position or dimension lies in the table.
 */
export function positionalCurvesSvg(o: PositionalCurvesOptions): string {
  const pe = positionalEncoding(o.length, o.dModel);
  const mode = o.mode ?? 'positions';
  let series: Series[];
  let x: number[];
  let title: string;
  let xLabel: string;
  if (mode === 'positions') {
    const positions = (o.positions ?? [0, 10, 20, 30, 40]).filter((p) => Number.isInteger(p) && p >= 0 && p < o.length);
    if (positions.length === 0) throw new Error(`positionalCurvesSvg: no position in 0..${o.length - 1} to draw`);
    const dims = Math.min(o.dModel, o.dims ?? 50);
    x = Array.from({ length: dims }, (_, i) => i);
    series = positions.map((p) => ({ label: `position ${p}`, values: pe[p].slice(0, dims) }));
    title = o.title ?? `Positional encodings of several positions (first ${dims} dimensions)`;
    xLabel = 'dimension';
  } else {
    const dimensions = (o.dimensions ?? [4, 5, 6, 7]).filter((d) => Number.isInteger(d) && d >= 0 && d < o.dModel);
    if (dimensions.length === 0) throw new Error(`positionalCurvesSvg: no dimension in 0..${o.dModel - 1} to draw`);
    x = Array.from({ length: o.length }, (_, i) => i);
    series = dimensions.map((d) => ({
      label: `dim ${d} (${d % 2 === 0 ? 'sin' : 'cos'})`,
      values: pe.map((row) => row[d]),
    }));
    title = o.title ?? 'Positional encoding of several dimensions over the positions';
    xLabel = 'position';
  }
  return lineChartSvg({
    series,
    x,
    title,
    xLabel,
    yLabel: 'value',
    yMin: -1.05,
    yMax: 1.05,
    className: 'qkv-positional-curves',
  });
}
