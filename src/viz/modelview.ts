/**
 * The model view: every layer × head of one attention kind as a grid of small heatmaps (rows =
 * layers, columns = heads), to spot at a glance which heads attend diagonally, to the first
 * token, to the previous token, … Returns an SVG string; each thumbnail is a <g class="thumb">
 * with data-layer and data-head, so a page can make it clickable.
 */
import { blues, parseHex, scaleByName, type ColorScale, type ScaleName } from './color.ts';
import { MASKED_FILL } from './heatmap.ts';
import { chartOpening, checkMatrix, maxTextWidth, px } from './svg.ts';

/** Options of {@link modelViewSvg}: the maps, the colour scale and the layout. */
export interface ModelViewOptions {
  /** [layer][head] → rows × cols weights. */
  maps: readonly (readonly (readonly (readonly number[])[])[])[];
  /** Heading above the grid. */
  title?: string;
  /** Longest side of a thumbnail in px (default 96). */
  thumbSize?: number;
  /** Bottom of the colour scale (default 0: attention weights). */
  min?: number;
  /** Top of the colour scale (default 1). */
  max?: number;
  /** 'blues' (default), 'rdbu', or any t ∈ [0, 1] → colour function. */
  scale?: ScaleName | ColorScale;
  /** The thumbnail to outline (0-based), or null for none. */
  selected?: {
    /** Its layer, 0-based. */
    layer: number;
    /** Its head, 0-based. */
    head: number;
  } | null;
  /** Cells blocked before the softmax (e.g. causal: col > row), drawn grey. */
  masked?: (row: number, col: number) => boolean;
  /** Background fill (default white, so PNG exports are not transparent); null for none. */
  background?: string | null;
  /** Extra class names on the root <svg>. */
  className?: string;
  /**
   * Draw the thumbnails' cells (default true). false: each thumbnail is its title and frame alone, the frame
   * taking pointer events, for a page that paints the cells as an image (thumbPixels) when it comes on screen.
   */
  cells?: boolean;
}

/**
 * The model view as an SVG string (see the file comment); throws if there is no layer or head, or
 * the layers differ in heads or the maps in shape.
 */
export function modelViewSvg(o: ModelViewOptions): string {
  const { L, H, rows, cols, cell: fillOf, thumbs, width, height, left, top, tw, th, pad } = modelViewLayout(o);
  const cw = tw / cols;
  const ch = th / rows;
  const out = chartOpening('qkv-modelview', width, height, `font-size="12" data-layers="${L}" data-heads="${H}"`, o);
  for (let h = 0; h < H; h++)
    out.push(
      `<text class="head-label" x="${px(left + h * (tw + pad) + tw / 2)}" ` +
        `y="${top - 6}" text-anchor="middle">head ${h + 1}</text>`,
    );
  for (let l = 0; l < L; l++) {
    out.push(
      `<text class="layer-label" x="${left - 8}" ` +
        `y="${px(top + l * (th + pad) + th / 2)}" text-anchor="end" ` +
        `dominant-baseline="central">layer ${l + 1}</text>`,
    );
    for (let h = 0; h < H; h++) {
      const { x0, y0 } = thumbs(l, h);
      const sel = o.selected && o.selected.layer === l && o.selected.head === h;
      out.push(
        `<g class="thumb${sel ? ' selected' : ''}" data-layer="${l}" ` +
          `data-head="${h}"><title>layer ${l + 1}, head ${h + 1}</title>`,
      );
      if (o.cells !== false) {
        for (let i = 0; i < rows; i++) {
          for (let j = 0; j < cols; j++) {
            out.push(
              `<rect x="${px(x0 + j * cw)}" y="${px(y0 + i * ch)}" width="${px(cw)}" height="${px(ch)}" ` +
                `fill="${fillOf(l, h, i, j)}"/>`,
            );
          }
        }
      }
      const frame = sel ? THUMB_FRAME.selected : THUMB_FRAME.plain;
      out.push(
        `<rect class="frame" x="${px(x0)}" y="${px(y0)}" width="${px(tw)}" ` +
          `height="${px(th)}" fill="none" stroke="${frame.stroke}" ` +
          `stroke-width="${frame.width}"${o.cells === false ? ' pointer-events="all"' : ''}/></g>`,
      );
    }
  }
  out.push(`</svg>`);
  return out.join('');
}

/**
 * The model view's SVG (modelViewSvg's picture) cut for insertion in pieces: `shell`, the
 * picture with its title and head labels but no layer, and `rows`, each layer's label and thumbnails, in order.
 * Appended to the shell's <svg> one after another they make the picture as drawn whole: a page inserts
 * them a piece a frame (web/src/views/attention-panel.ts).
 */
export function modelViewRows(svg: string): { shell: string; rows: string[] } {
  const mark = '<text class="layer-label"';
  const end = svg.lastIndexOf('</svg>');
  const first = svg.indexOf(mark);
  if (first < 0 || end < first) return { shell: svg, rows: [] };
  const rows: string[] = [];
  for (let at = first; at < end; ) {
    const next = svg.indexOf(mark, at + mark.length);
    const stop = next < 0 || next > end ? end : next;
    rows.push(svg.slice(at, stop));
    at = stop;
  }
  return { shell: svg.slice(0, first) + svg.slice(end), rows };
}

/**
 * The cells of thumbnail (layer, head) as an RGBA image of one pixel per cell (cols × rows), each the colour its
 * <rect> has in modelViewSvg: what a page paints, scaled to the frame, in place of the rects.
 */
export function thumbPixels(
  o: ModelViewOptions,
  layer: number,
  head: number,
): { width: number; height: number; data: Uint8ClampedArray } {
  const { rows, cols, cell } = modelViewLayout(o);
  const data = new Uint8ClampedArray(rows * cols * 4);
  // The same few colours recur (masked, near 0): parsed once each.
  const rgb = new Map<string, [number, number, number]>();
  for (let i = 0; i < rows; i++) {
    for (let j = 0; j < cols; j++) {
      const fill = cell(layer, head, i, j);
      let c = rgb.get(fill);
      if (!c) {
        c = parseHex(fill);
        rgb.set(fill, c);
      }
      const at = (i * cols + j) * 4;
      data[at] = c[0];
      data[at + 1] = c[1];
      data[at + 2] = c[2];
      data[at + 3] = 255;
    }
  }
  return { width: cols, height: rows, data };
}

/** Where the model view puts everything, and each cell's fill; throws on maps it cannot draw. */
function modelViewLayout(o: ModelViewOptions) {
  const L = o.maps.length;
  if (L === 0) throw new Error('modelViewSvg: maps must hold at least one layer');
  const H = o.maps[0].length;
  if (H === 0) throw new Error('modelViewSvg: layer 0 has no heads');
  let rows = 0;
  let cols = 0;
  o.maps.forEach((layer, l) => {
    if (layer.length !== H) throw new Error(`modelViewSvg: layer ${l} has ${layer.length} heads, layer 0 has ${H}`);
    layer.forEach((m, h) => {
      const s = checkMatrix(m, `modelViewSvg: layer ${l} head ${h}`);
      if (l === 0 && h === 0) ({ rows, cols } = s);
      else if (s.rows !== rows || s.cols !== cols)
        throw new Error(`modelViewSvg: layer ${l} head ${h} is ${s.rows}×${s.cols}, layer 0 head 0 is ${rows}×${cols}`);
    });
  });
  const size = o.thumbSize ?? 96;
  // Square cells, but no side of a thumbnail under half the size (a long, narrow map is stretched).
  const cell = size / Math.max(rows, cols);
  const tw = Math.max(cols * cell, size / 2);
  const th = Math.max(rows * cell, size / 2);
  const pad = 10;
  const left = 62;
  const top = (o.title ? 28 : 6) + 18;
  const width = Math.ceil(Math.max(left + H * (tw + pad) + 4, o.title ? 16 + maxTextWidth([o.title], 14) * 1.12 : 0));
  const height = Math.ceil(top + L * (th + pad) + 4);
  const lo = o.min ?? 0;
  const hi = o.max ?? 1;
  const color = o.scale === undefined ? blues : scaleByName(o.scale);
  const t = (v: number) => (hi === lo ? 0.5 : (v - lo) / (hi - lo));
  return {
    L,
    H,
    rows,
    cols,
    width,
    height,
    left,
    top,
    tw,
    th,
    pad,
    /** The top-left corner of thumbnail (l, h). */
    thumbs: (l: number, h: number) => ({ x0: left + h * (tw + pad), y0: top + l * (th + pad) }),
    /** The fill of cell (i, j) of thumbnail (l, h). */
    cell: (l: number, h: number, i: number, j: number): string => {
      const v = o.maps[l][h][i][j];
      return o.masked?.(i, j) || !Number.isFinite(v) ? MASKED_FILL : color(t(v));
    },
  };
}

/** A thumbnail's frame, selected or not (the explorer moves the selection without drawing the grid again). */
export const THUMB_FRAME = {
  selected: { stroke: '#d62728', width: 2.5 },
  plain: { stroke: '#bbb', width: 0.75 },
} as const;

/** Mean over heads of one layer's maps (rows × cols), e.g. for an "all heads" heatmap. */
export function averageHeads(heads: readonly (readonly (readonly number[])[])[]): number[][] {
  if (heads.length === 0) throw new Error('averageHeads: no heads');
  const { rows, cols } = checkMatrix(heads[0], 'averageHeads');
  const out = Array.from({ length: rows }, () => new Array<number>(cols).fill(0));
  for (const m of heads)
    for (let i = 0; i < rows; i++) for (let j = 0; j < cols; j++) out[i][j] += m[i][j] / heads.length;
  return out;
}
