/**
 * Colour scales as functions from t ∈ [0, 1] to '#rrggbb': matplotlib's "Blues" (the seeds' attention
 * maps: white for 0, dark blue for 1, lightness falling monotonically) and "RdBu" (the seeds'
 * positional-encoding map: red for −1, white for 0, blue for +1). Piecewise-linear between
 * ColorBrewer's stops, interpolated in sRGB.
 */

export type ColorScale = (t: number) => string;

/** ColorBrewer Blues, 9 classes (matplotlib's "Blues"). Every channel falls from stop to stop. */
export const BLUES_STOPS: readonly string[] = [
  '#f7fbff',
  '#deebf7',
  '#c6dbef',
  '#9ecae1',
  '#6baed6',
  '#4292c6',
  '#2171b5',
  '#08519c',
  '#08306b',
];

/** ColorBrewer RdBu, 11 classes (matplotlib's "RdBu": red at the low end). */
export const RDBU_STOPS: readonly string[] = [
  '#67001f',
  '#b2182b',
  '#d6604d',
  '#f4a582',
  '#fddbc7',
  '#f7f7f7',
  '#d1e5f0',
  '#92c5de',
  '#4393c3',
  '#2166ac',
  '#053061',
];

export function parseHex(hex: string): [number, number, number] {
  const m = /^#([0-9a-f]{6})$/i.exec(hex);
  if (!m) throw new Error(`color: expected '#rrggbb', got '${hex}'`);
  const n = parseInt(m[1], 16);
  return [(n >> 16) & 255, (n >> 8) & 255, n & 255];
}

export function toHex(r: number, g: number, b: number): string {
  const c = (x: number) =>
    Math.max(0, Math.min(255, Math.round(x)))
      .toString(16)
      .padStart(2, '0');
  return `#${c(r)}${c(g)}${c(b)}`;
}

/** A scale through `stops`, evenly spaced on [0, 1]; t outside is clamped, NaN gives the first stop. */
export function interpolateStops(stops: readonly string[]): ColorScale {
  if (stops.length < 2) throw new Error('color: a scale needs at least 2 stops');
  const rgb = stops.map(parseHex);
  const n = rgb.length - 1;
  return (t: number): string => {
    const x = Number.isNaN(t) ? 0 : Math.max(0, Math.min(1, t)) * n;
    const i = Math.min(n - 1, Math.floor(x));
    const f = x - i;
    const [a, b] = [rgb[i], rgb[i + 1]];
    return toHex(a[0] + (b[0] - a[0]) * f, a[1] + (b[1] - a[1]) * f, a[2] + (b[2] - a[2]) * f);
  };
}

/** matplotlib's "Blues": white at 0, dark blue at 1 (attention weights). */
export const blues: ColorScale = interpolateStops(BLUES_STOPS);
/** matplotlib's "RdBu": red at 0, white at 0.5, blue at 1 (signed values such as the position encoding). */
export const rdbu: ColorScale = interpolateStops(RDBU_STOPS);

/** A colour scale by name: `blues` or `rdbu`. */
export type ScaleName = 'blues' | 'rdbu';

/** The scale of a name (a function is returned as it is); throws on an unknown name. */
export function scaleByName(name: ScaleName | ColorScale): ColorScale {
  if (typeof name === 'function') return name;
  if (name === 'blues') return blues;
  if (name === 'rdbu') return rdbu;
  throw new Error(`color: unknown scale '${String(name)}' (expected 'blues' or 'rdbu')`);
}

/** WCAG relative luminance of '#rrggbb', 0 (black) .. 1 (white). */
export function luminance(hex: string): number {
  const lin = (c: number) => {
    const s = c / 255;
    return s <= 0.04045 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
  };
  const [r, g, b] = parseHex(hex);
  return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
}

/** Text colour readable on `background`. */
export function textColorOn(background: string): string {
  return luminance(background) < 0.3 ? '#ffffff' : '#1a1a1a';
}

/** Distinct colours for heads (Tableau 10), cycled. */
export const HEAD_COLORS: readonly string[] = [
  '#1f77b4',
  '#ff7f0e',
  '#2ca02c',
  '#d62728',
  '#9467bd',
  '#8c564b',
  '#e377c2',
  '#7f7f7f',
  '#bcbd22',
  '#17becf',
];

/** Colour of head h (0-based) in {@link HEAD_COLORS}, cycled past 10 heads. */
export function headColor(h: number): string {
  return HEAD_COLORS[((h % HEAD_COLORS.length) + HEAD_COLORS.length) % HEAD_COLORS.length];
}
