/**
 * The head view (as bertviz): the query tokens in a column on the left, the key tokens on the
 * right, and a line from each query to each key whose opacity and width are the attention weight.
 * Several heads overlay in their own colours. Returns an SVG string.
 */
import { headColor } from './color.ts';
import { chartOpening, checkMatrix, esc, formatValue, joinPieces, maxTextWidth, px, type SvgPieces } from './svg.ts';

/** Options of {@link headViewSvg}: the weights, the token labels and the layout. */
export interface HeadViewOptions {
  /** Per head, rows × cols weights (row = query, column = key). */
  heads: readonly (readonly (readonly number[])[])[];
  /** Query tokens (left column), one per row. */
  leftLabels: readonly string[];
  /** Key tokens (right column), one per column. */
  rightLabels: readonly string[];
  /** The head numbers shown and used for colours (default 0, 1, …): pass [2] when `heads` is head 2 alone. */
  headIds?: readonly number[];
  /** Heading above the columns (also the SVG's aria-label). */
  title?: string;
  /** Only the lines from this query row (others greyed). */
  highlight?: number | null;
  /** Lines with weight ≤ this are left out (default 0: a masked key has no line). */
  minWeight?: number;
  /** Vertical distance between tokens in px (default 22). */
  rowHeight?: number;
  /** Horizontal gap between the two columns in px (default 160). */
  gap?: number;
  /** Background fill (default white, so PNG exports are not transparent); null for none. */
  background?: string | null;
  /** Extra class names on the root <svg>. */
  className?: string;
}

const FONT = 12;

/**
 * The head view as an SVG string (see the file comment); throws if the heads differ in shape or the labels do
 * not match the rows and columns.
 */
export function headViewSvg(o: HeadViewOptions): string {
  return joinPieces(headViewPieces(o));
}

/** One line of the head view, as its <line> draws it (round caps). */
export interface HeadViewLink {
  /** The head's number (its colour). */
  head: number;
  /** The query (left token). */
  row: number;
  /** The key (right token). */
  col: number;
  x1: number;
  y1: number;
  x2: number;
  y2: number;
  /** Colour, opacity (the weight, dimmed off the highlighted row) and width (1 to 4 px with the weight). */
  stroke: string;
  opacity: number;
  width: number;
  /** The attention weight. */
  value: number;
}

/** The head view in pieces, each piece's lines also as numbers (a page may paint a long one on a canvas). */
export interface HeadViewPieces extends SvgPieces {
  /** The lines of piece k, in the order the SVG has them. */
  links(k: number): HeadViewLink[];
  /** Query-key pairs over all heads (the most lines there can be). */
  lines: number;
  /** The picture's size in px. */
  size: { width: number; height: number };
  /** Where every line lies (their round caps included), in px of the picture. */
  linksBox: { x: number; y: number; width: number; height: number };
}

/**
 * Query-key pairs in one piece of {@link headViewPieces} (each a <line> with its <title> when its weight is > 0):
 * a piece's antialiased lines, painted on a canvas, take a few ms to rasterise.
 */
export const HEADVIEW_PAIRS_PER_PIECE = 300;

/** {@link headViewSvg} in pieces (the heads' rows in turn, about HEADVIEW_PAIRS_PER_PIECE pairs each), in `g.links`. */
export function headViewPieces(o: HeadViewOptions): HeadViewPieces {
  if (o.heads.length === 0) throw new Error('headViewSvg: heads must hold at least one head');
  const shapes = o.heads.map((h, i) => checkMatrix(h, `headViewSvg: head ${i}`));
  const { rows, cols } = shapes[0];
  shapes.forEach((s, i) => {
    if (s.rows !== rows || s.cols !== cols)
      throw new Error(`headViewSvg: head ${i} is ${s.rows}×${s.cols}, head 0 is ${rows}×${cols}`);
  });
  if (o.leftLabels.length !== rows)
    throw new Error(`headViewSvg: ${o.leftLabels.length} left labels for ${rows} query rows`);
  if (o.rightLabels.length !== cols)
    throw new Error(`headViewSvg: ${o.rightLabels.length} right labels for ${cols} key columns`);
  const ids = o.headIds ?? o.heads.map((_, i) => i);
  if (ids.length !== o.heads.length) throw new Error(`headViewSvg: ${ids.length} head ids for ${o.heads.length} heads`);
  const rh = o.rowHeight ?? 22;
  const gap = o.gap ?? 160;
  const minW = o.minWeight ?? 0;
  const hl = o.highlight ?? null;
  const lw = Math.ceil(maxTextWidth(o.leftLabels, FONT));
  const rw = Math.ceil(maxTextWidth(o.rightLabels, FONT));
  const top = (o.title ? 26 : 6) + 22;
  const x0 = 8 + lw;
  const x1 = x0 + 8;
  const x2 = x1 + gap;
  const x3 = x2 + 8;
  const width = Math.ceil(Math.max(x3 + rw + 8, 16 + maxTextWidth([o.title ?? ''], 14) * 1.12, 8 + ids.length * 70));
  const height = Math.ceil(top + Math.max(rows, cols) * rh + 6);
  const yOf = (i: number) => top + (i + 0.5) * rh;

  const out = chartOpening(
    'qkv-headview',
    width,
    height,
    `font-size="${FONT}" data-rows="${rows}" data-cols="${cols}"`,
    o,
  );
  const ly = (o.title ? 26 : 6) + 8;
  out.push(`<g class="head-legend">`);
  ids.forEach((h, k) => {
    out.push(
      `<rect x="${8 + k * 70}" y="${ly - 6}" width="12" height="12" ` +
        `fill="${headColor(h)}"/><text x="${8 + k * 70 + 16}" y="${ly}" ` +
        `dominant-baseline="central">head ${h + 1}</text>`,
    );
  });
  out.push(`</g>`);
  out.push(`<g class="links" stroke-linecap="round">`);
  const before = out.join('');
  out.length = 0;
  // Line (k, i, j): head k's weight from query i to key j, or null when it is ≤ minWeight (no line).
  const link = (k: number, i: number, j: number): HeadViewLink | null => {
    const v = o.heads[k][i][j];
    if (!(v > minW)) return null;
    const dim = hl !== null && hl !== i;
    return {
      head: ids[k],
      row: i,
      col: j,
      x1,
      y1: Number(px(yOf(i))),
      x2,
      y2: Number(px(yOf(j))),
      stroke: headColor(ids[k]),
      opacity: Number(px(Math.min(1, v) * (dim ? 0.12 : 1))),
      width: Number(px(1 + 3 * Math.min(1, v))),
      value: v,
    };
  };
  const lineSvg = (l: HeadViewLink, into: string[]) =>
    into.push(
      `<line class="link" data-head="${l.head}" data-row="${l.row}" ` +
        `data-col="${l.col}" x1="${l.x1}" y1="${l.y1}" x2="${l.x2}" ` +
        `y2="${l.y2}" stroke="${l.stroke}" stroke-opacity="${l.opacity}" ` +
        `stroke-width="${l.width}"><title>head ` +
        `${l.head + 1}: ${esc(o.leftLabels[l.row])} → ${esc(o.rightLabels[l.col])}: ` +
        `${formatValue(l.value, 4)}</title></line>`,
    );
  // The heads' rows one after another (head k's row i is row k · rows + i), rowsPerPiece of them a piece: a small
  // head view is one piece.
  const rowsPerPiece = Math.max(1, Math.floor(HEADVIEW_PAIRS_PER_PIECE / cols));
  const allRows = o.heads.length * rows;
  out.push(`</g>`);
  out.push(`<g class="left-labels" text-anchor="end" dominant-baseline="central">`);
  o.leftLabels.forEach((l, i) =>
    out.push(
      `<text class="token" data-row="${i}" x="${x0}" ` +
        `y="${px(yOf(i))}"${hl === i ? ' font-weight="700"' : ''}>${esc(l)}</text>`,
    ),
  );
  out.push(`</g><g class="right-labels" dominant-baseline="central">`);
  o.rightLabels.forEach((l, j) =>
    out.push(`<text class="token" data-col="${j}" x="${x3}" y="${px(yOf(j))}">${esc(l)}</text>`),
  );
  out.push(`</g></svg>`);
  const linksOf = (k: number): HeadViewLink[] => {
    const got: HeadViewLink[] = [];
    for (let r = k * rowsPerPiece; r < Math.min(allRows, (k + 1) * rowsPerPiece); r++)
      for (let j = 0; j < cols; j++) {
        const l = link(Math.floor(r / rows), r % rows, j);
        if (l) got.push(l);
      }
    return got;
  };
  return {
    before,
    after: out.join(''),
    container: 'g.links',
    count: Math.ceil(allRows / rowsPerPiece),
    piece(k) {
      const into: string[] = [];
      for (const l of linksOf(k)) lineSvg(l, into);
      return into.join('');
    },
    links: linksOf,
    lines: o.heads.length * rows * cols,
    size: { width, height },
    // A line is at most 4 px wide: its round caps reach 2 px past its ends.
    linksBox: { x: x1 - 2, y: 0, width: x2 - x1 + 4, height },
  };
}
