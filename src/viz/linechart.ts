/**
 * A small line chart: several series over a shared x axis, with axes, ticks, a light grid and a
 * legend. Returns an SVG string; each series is a <polyline class="series" data-label>.
 */
import { headColor } from './color.ts';
import { chartOpening, esc, formatValue, maxTextWidth, px } from './svg.ts';

/** One line of a chart. */
export interface Series {
  /** Its name in the legend (and the polyline's data-label). */
  label: string;
  /** One y per x; every series has as many. */
  values: readonly number[];
  /** Stroke colour (default: {@link headColor} of the series' index). */
  color?: string;
}

/** Options of {@link lineChartSvg}. */
export interface LineChartOptions {
  /** The lines, drawn in order, at least one. */
  series: readonly Series[];
  /** x of each point (default 0, 1, 2, …); shared by all series. */
  x?: readonly number[];
  /** Heading above the plot. */
  title?: string;
  /** Name of the x axis, e.g. 'step'. */
  xLabel?: string;
  /** Name of the y axis, e.g. 'loss'. */
  yLabel?: string;
  /** Plot area width in px (default 560). */
  width?: number;
  /** Plot area height in px (default 220). */
  height?: number;
  /** Bottom of the y range (default: the smallest finite value; ±1 around a constant series). */
  yMin?: number;
  /** Top of the y range (default: the largest finite value). */
  yMax?: number;
  /** Background fill (default white, so PNG exports are not transparent); null for none. */
  background?: string | null;
  /** Extra class names on the root <svg>. */
  className?: string;
}

/** About `n` round tick values covering [lo, hi]. */
export function niceTicks(lo: number, hi: number, n = 5): number[] {
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / n;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? 10 * mag;
  const out: number[] = [];
  for (let v = Math.ceil(lo / step - 1e-9) * step; v <= hi + step * 1e-9; v += step)
    out.push(Math.abs(v) < step * 1e-9 ? 0 : v);
  return out;
}

function decimalsFor(ticks: number[]): number {
  if (ticks.length < 2) return 2;
  const step = Math.abs(ticks[1] - ticks[0]);
  return Math.max(0, Math.min(4, -Math.floor(Math.log10(step) + 1e-9)));
}

/**
 * The chart as an SVG string (see the file comment); throws if there is no series, no value, or the series or
 * x differ in length.
 */
export function lineChartSvg(o: LineChartOptions): string {
  if (o.series.length === 0) throw new Error('lineChartSvg: series must hold at least one series');
  const n = o.series[0].values.length;
  if (n === 0) throw new Error('lineChartSvg: series must have at least one value');
  o.series.forEach((s, i) => {
    if (s.values.length !== n)
      throw new Error(`lineChartSvg: series ${i} ('${s.label}') has ${s.values.length} values, series 0 has ${n}`);
  });
  const xs = o.x ?? Array.from({ length: n }, (_, i) => i);
  if (xs.length !== n) throw new Error(`lineChartSvg: ${xs.length} x values for ${n} points`);
  let ylo = Infinity;
  let yhi = -Infinity;
  for (const s of o.series)
    for (const v of s.values)
      if (Number.isFinite(v)) {
        ylo = Math.min(ylo, v);
        yhi = Math.max(yhi, v);
      }
  if (!(ylo <= yhi)) [ylo, yhi] = [0, 1];
  if (ylo === yhi) [ylo, yhi] = [ylo - 1, yhi + 1];
  ylo = o.yMin ?? ylo;
  yhi = o.yMax ?? yhi;
  const xlo = Math.min(...xs);
  const xhi = Math.max(...xs) === xlo ? xlo + 1 : Math.max(...xs);
  const pw = o.width ?? 560;
  const ph = o.height ?? 220;
  const yTicks = niceTicks(ylo, yhi, 5);
  const xTicks = niceTicks(xlo, xhi, 8);
  const yd = decimalsFor(yTicks);
  const xd = decimalsFor(xTicks);
  const left =
    14 +
    (o.yLabel ? 16 : 0) +
    maxTextWidth(
      yTicks.map((v) => formatValue(v, yd)),
      11,
    );
  const top = o.title ? 30 : 10;
  const legendW =
    24 +
    maxTextWidth(
      o.series.map((s) => s.label),
      12,
    );
  const width = Math.ceil(
    Math.max(left + pw + 16 + legendW + 8, left + 8 + (o.title ? maxTextWidth([o.title], 14) * 1.12 : 0)),
  );
  const height = Math.ceil(top + ph + 22 + (o.xLabel ? 18 : 0) + 4);
  const X = (v: number) => left + ((v - xlo) / (xhi - xlo)) * pw;
  const Y = (v: number) => top + (1 - (v - ylo) / (yhi - ylo)) * ph;

  const out = chartOpening('qkv-linechart', width, height, 'font-size="12"', o, px(left));
  out.push(`<g class="grid" stroke="#e5e5e5">`);
  for (const v of yTicks)
    if (v >= ylo && v <= yhi)
      out.push(`<line x1="${px(left)}" x2="${px(left + pw)}" y1="${px(Y(v))}" y2="${px(Y(v))}"/>`);
  for (const v of xTicks)
    if (v >= xlo && v <= xhi)
      out.push(`<line x1="${px(X(v))}" x2="${px(X(v))}" y1="${px(top)}" y2="${px(top + ph)}"/>`);
  out.push(`</g><g class="axes" font-size="11" fill="#444">`);
  out.push(`<rect x="${px(left)}" y="${px(top)}" width="${pw}" height="${ph}" fill="none" stroke="#999"/>`);
  for (const v of yTicks)
    if (v >= ylo && v <= yhi)
      out.push(
        `<text x="${px(left - 4)}" y="${px(Y(v))}" text-anchor="end" ` +
          `dominant-baseline="central">${formatValue(v, yd)}</text>`,
      );
  for (const v of xTicks)
    if (v >= xlo && v <= xhi)
      out.push(`<text x="${px(X(v))}" y="${px(top + ph + 14)}" text-anchor="middle">${formatValue(v, xd)}</text>`);
  out.push(`</g>`);
  if (o.xLabel)
    out.push(
      `<text class="x-label" x="${px(left + pw / 2)}" ` +
        `y="${px(top + ph + 32)}" text-anchor="middle" ` +
        `fill="#555">${esc(o.xLabel)}</text>`,
    );
  if (o.yLabel) {
    const cy = px(top + ph / 2);
    out.push(
      `<text class="y-label" x="12" y="${cy}" text-anchor="middle" ` +
        `fill="#555" transform="rotate(-90 12 ${cy})">${esc(o.yLabel)}</text>`,
    );
  }
  o.series.forEach((s, k) => {
    const c = s.color ?? headColor(k);
    const pts = s.values.map((v, i) => `${px(X(xs[i]))},${px(Y(Math.max(ylo, Math.min(yhi, v))))}`).join(' ');
    out.push(
      `<polyline class="series" data-label="${esc(s.label)}" points="${pts}" ` +
        `fill="none" stroke="${c}" ` +
        `stroke-width="1.5"><title>${esc(s.label)}</title></polyline>`,
    );
    const ly = top + 8 + k * 18;
    out.push(
      `<line x1="${px(left + pw + 16)}" x2="${px(left + pw + 32)}" ` +
        `y1="${ly}" y2="${ly}" stroke="${c}" stroke-width="2"/><text ` +
        `class="legend-label" x="${px(left + pw + 36)}" y="${ly}" ` +
        `dominant-baseline="central">${esc(s.label)}</text>`,
    );
  });
  out.push(`</svg>`);
  return out.join('');
}
