/**
 * Small helpers for writing SVG as strings: escaping, number formatting, text-width estimates.
 * Pure functions, no DOM: the same code draws in Node (`qkv attention`) and in the browser.
 */

/** Escape text for use inside an element or a double-quoted attribute. */
export function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** A coordinate or size, rounded to 2 decimals, without trailing zeros (keeps files small and stable). */
export function px(n: number): string {
  const r = Math.round(n * 100) / 100;
  return Object.is(r, -0) ? '0' : String(r);
}

/** A value as shown to a reader: fixed decimals, −∞ / +∞ / NaN spelled out, no "-0.00". */
export function formatValue(v: number, digits = 2): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return '∞';
  if (v === -Infinity) return '−∞';
  const s = v.toFixed(digits);
  return /^-0\.?0*$/.test(s) ? s.slice(1) : s;
}

/** Rough width in px of `text` in a sans-serif font of `fontSize` px (for layout only). */
export function textWidth(text: string, fontSize: number): number {
  let w = 0;
  for (const ch of text)
    w += /[il.,:;'|!\u2581]/.test(ch) ? 0.3 : /[mwMW@]/.test(ch) ? 0.85 : /[A-Z]/.test(ch) ? 0.66 : 0.56;
  return w * fontSize;
}

/** The widest of `labels` in px. */
export function maxTextWidth(labels: readonly string[], fontSize: number): number {
  return labels.reduce((m, l) => Math.max(m, textWidth(l, fontSize)), 0);
}

/** A rows × cols array check with a message naming the argument. */
export function checkMatrix(values: readonly (readonly number[])[], what: string): { rows: number; cols: number } {
  if (!Array.isArray(values) || values.length === 0)
    throw new Error(`${what}: values must be a non-empty rows × cols array`);
  const cols = values[0].length;
  if (cols === 0) throw new Error(`${what}: values must have at least one column`);
  values.forEach((row, i) => {
    if (row.length !== cols) throw new Error(`${what}: row ${i} has ${row.length} values, row 0 has ${cols}`);
  });
  return { rows: values.length, cols };
}

/** The smallest and largest finite values (0..1 when there are none). */
export function finiteRange(values: readonly (readonly number[])[]): [number, number] {
  let lo = Infinity;
  let hi = -Infinity;
  for (const row of values) {
    for (const v of row) {
      if (Number.isFinite(v)) {
        if (v < lo) lo = v;
        if (v > hi) hi = v;
      }
    }
  }
  return lo <= hi ? [lo, hi] : [0, 1];
}

/** The options every chart's opening reads (a subset of each chart's own options). */
export interface ChartFrame {
  /** Extra class on the <svg>, after the chart's own. */
  className?: string;
  /** Drawn at the top and given as the aria-label. */
  title?: string;
  /** Fill of a background rect; null for none (transparent). Default white. */
  background?: string | null;
}

/**
 * A chart's first lines: the <svg> element of class `kind` (and `o.className`), `width` × `height`,
 * with `attrs` (font size, data-*) before its role and aria-label; the background rect unless
 * `o.background` is null; the title at x = `titleX`, y = 18.
 */
export function chartOpening(
  kind: string,
  width: number,
  height: number,
  attrs: string,
  o: ChartFrame,
  titleX = '8',
): string[] {
  const out = [
    `<svg xmlns="http://www.w3.org/2000/svg" ` +
      `class="${kind}${o.className ? ` ${esc(o.className)}` : ''}" ` +
      `width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" ` +
      `font-family="system-ui, sans-serif" ${attrs} ` +
      `role="img"${o.title ? ` aria-label="${esc(o.title)}"` : ''}>`,
  ];
  if (o.background !== null)
    out.push(`<rect class="background" width="${width}" height="${height}" fill="${o.background ?? '#ffffff'}"/>`);
  if (o.title)
    out.push(`<text class="title" x="${titleX}" y="18" font-size="14" font-weight="600">${esc(o.title)}</text>`);
  return out;
}

/**
 * An SVG in pieces, for a page that draws a long map a piece per frame: `before`, then every piece in order,
 * then `after` is the whole picture (joinPieces). `container` selects, within the picture, the element the pieces
 * go into: the element whose opening tag ends `before`.
 */
export interface SvgPieces {
  /** The picture up to the container's opening tag. */
  before: string;
  /** From the container's closing tag to the end of the picture. */
  after: string;
  /** A selector of the container within the <svg> (e.g. 'g.cells'). */
  container: string;
  /** How many pieces there are. */
  count: number;
  /** The k-th piece (0-based): elements of the container, in order. */
  piece(k: number): string;
}

/** The whole picture of `p`: before, every piece, after. */
export function joinPieces(p: SvgPieces): string {
  const out = [p.before];
  for (let k = 0; k < p.count; k++) out.push(p.piece(k));
  out.push(p.after);
  return out.join('');
}
