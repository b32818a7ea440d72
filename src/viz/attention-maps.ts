/**
 * Pictures of one stack of attention maps ([layer][head][query][key]) with what labels them: one
 * head's heatmap, a layer's head view, the model view (every layer × head), and a grid of labelled
 * heatmaps. The translation's three kinds (translation.ts) and a GPT's causal self-attention
 * (gpt.ts) are drawn by these same functions.
 */
import type { AttentionStack } from './attention-data.ts';
import { gridSvg } from './compose.ts';
import { type HeatmapPieces, heatmapPieces } from './heatmap.ts';
import { type HeadViewPieces, headViewPieces } from './headview.ts';
import { averageHeads, modelViewSvg, thumbPixels, type ModelViewOptions } from './modelview.ts';
import { joinPieces } from './svg.ts';

/** One kind of attention of a model run, ready to draw. */
export interface AttentionMaps {
  /** What it is, e.g. 'decoder masked self-attention'. */
  name: string;
  /** [layer][head][query][key]; empty when there is nothing to draw. */
  maps: AttentionStack;
  /** Query tokens, one per row. */
  rows: readonly string[];
  /** Key tokens, one per column. */
  cols: readonly string[];
  /** Name of the horizontal axis (the keys), e.g. 'key (attended to)'. */
  xLabel: string;
  /** Name of the vertical axis (the queries), e.g. 'query (attending)'. */
  yLabel: string;
  /** Keys after the query are masked (causal self-attention): drawn grey. */
  causal: boolean;
  /** Why `maps` may be empty, said in the error when asked to draw it (e.g. 'the translation is empty'). */
  emptyReason?: string;
  /** Smallest side of a heatmap cell in px (default 14), for long sequences. */
  minCell?: number;
  /**
   * Grouped-query attention: the KV heads the heads share (heads / kvHeads query heads read each); the page labels
   * each head with its KV head. Absent: every head has its own.
   */
  kvHeads?: number;
}

/** Options of {@link mapsHeatmapSvg}. */
export interface AttentionHeatmapOptions {
  /** Side of a cell in px (default: fitted to the sequence, 14 to 36 px, at least `minCell`). */
  cellSize?: number;
  /** Heading (default: the kind, layer and head, e.g. 'encoder self-attention · layer 1 · head 2'). */
  title?: string;
  /** Print each weight in its cell (default: when cells are at least 26 px). */
  showValues?: boolean;
}

/** Layers and heads in the stack. */
export function mapsSize(m: AttentionMaps): {
  /** Number of layers (0 when there is nothing to draw). */
  layers: number;
  /** Heads per layer. */
  heads: number;
} {
  return { layers: m.maps.length, heads: m.maps[0]?.length ?? 0 };
}

/** The causal mask (key after query) when the maps are causal. */
export function causalMask(m: AttentionMaps): ((i: number, j: number) => boolean) | undefined {
  return m.causal ? (i, j) => j > i : undefined;
}

function nothingToDraw(m: AttentionMaps): Error {
  return new Error(`no ${m.name} to draw${m.emptyReason ? ` (${m.emptyReason})` : ''}`);
}

function check(m: AttentionMaps, layer: number, head: number | 'mean'): void {
  const { layers, heads } = mapsSize(m);
  if (layers === 0) throw nothingToDraw(m);
  if (!Number.isInteger(layer) || layer < 0 || layer >= layers)
    throw new Error(`layer ${layer + 1} does not exist: the ${m.name} has layers 1..${layers}`);
  if (head !== 'mean' && (!Number.isInteger(head) || head < 0 || head >= heads))
    throw new Error(`head ${head + 1} does not exist: layers have heads 1..${heads}`);
}

/** One head's map (0-based layer and head; 'mean' averages the heads), tokens on both axes. */
export function mapsHeatmapSvg(
  m: AttentionMaps,
  layer: number,
  head: number | 'mean',
  o: AttentionHeatmapOptions = {},
): string {
  return joinPieces(mapsHeatmapPieces(m, layer, head, o));
}

/** {@link mapsHeatmapSvg} in pieces of rows, for a page to draw a few a frame. */
export function mapsHeatmapPieces(
  m: AttentionMaps,
  layer: number,
  head: number | 'mean',
  o: AttentionHeatmapOptions = {},
): HeatmapPieces {
  check(m, layer, head);
  const heads = m.maps[layer];
  const values = head === 'mean' ? averageHeads(heads) : heads[head];
  const fit = (n: number) => Math.max(m.minCell ?? 14, Math.min(36, Math.floor(520 / n)));
  return heatmapPieces({
    values,
    rowLabels: m.rows,
    colLabels: m.cols,
    title: o.title ?? `${m.name} · layer ${layer + 1} · ${head === 'mean' ? 'mean of heads' : `head ${head + 1}`}`,
    xLabel: m.xLabel,
    yLabel: m.yLabel,
    min: 0,
    max: 1,
    cellWidth: o.cellSize ?? fit(m.cols.length),
    cellHeight: o.cellSize ?? fit(m.rows.length),
    showValues: o.showValues,
    masked: causalMask(m),
    className: 'qkv-attention',
  });
}

/** bertviz's head view of one layer: every head's lines (or only `heads`). */
export function mapsHeadViewSvg(
  m: AttentionMaps,
  layer: number,
  heads?: readonly number[],
  highlight: number | null = null,
): string {
  return joinPieces(mapsHeadViewPieces(m, layer, heads, highlight));
}

/** {@link mapsHeadViewSvg} in pieces of a head's rows, for a page to draw a few a frame. */
export function mapsHeadViewPieces(
  m: AttentionMaps,
  layer: number,
  heads?: readonly number[],
  highlight: number | null = null,
): HeadViewPieces {
  check(m, layer, 'mean');
  const all = m.maps[layer];
  const ids = heads ?? all.map((_, h) => h);
  ids.forEach((h) => check(m, layer, h));
  return headViewPieces({
    heads: ids.map((h) => all[h]),
    headIds: ids,
    leftLabels: m.rows,
    rightLabels: m.cols,
    highlight,
    title: `${m.name} · layer ${layer + 1}`,
  });
}

/**
 * Every layer × head as thumbnails; `cells` false leaves the thumbnails' cells out (a page paints them with
 * mapsThumbPixels as they come on screen).
 */
export function mapsModelViewSvg(
  m: AttentionMaps,
  selected: { layer: number; head: number } | null = null,
  thumbSize = 96,
  cells = true,
): string {
  return modelViewSvg({ ...modelViewOptions(m, thumbSize), selected, cells });
}

/** The cells of the model view's thumbnail (layer, head) as an image, a pixel per cell, the colours of its rects. */
export function mapsThumbPixels(
  m: AttentionMaps,
  layer: number,
  head: number,
  thumbSize = 96,
): { width: number; height: number; data: Uint8ClampedArray } {
  check(m, layer, head);
  return thumbPixels(modelViewOptions(m, thumbSize), layer, head);
}

function modelViewOptions(m: AttentionMaps, thumbSize: number): ModelViewOptions {
  if (mapsSize(m).layers === 0) throw nothingToDraw(m);
  return { maps: m.maps, title: `${m.name}: layers × heads`, thumbSize, masked: causalMask(m) };
}

/** Labelled heatmaps of the chosen layers × heads (all by default), one row per layer. */
export function mapsGridSvg(
  m: AttentionMaps,
  title: string,
  layers?: readonly number[],
  heads?: readonly number[],
): string {
  const size = mapsSize(m);
  const ls = layers ?? Array.from({ length: size.layers }, (_, i) => i);
  const hs = heads ?? Array.from({ length: size.heads }, (_, i) => i);
  const parts: string[] = [];
  for (const l of ls)
    for (const h of hs)
      parts.push(mapsHeatmapSvg(m, l, h, { title: `layer ${l + 1} · head ${h + 1}`, cellSize: 22, showValues: false }));
  return gridSvg(parts, { columns: hs.length, title });
}

/** A text cut to n characters with an ellipsis, for titles. */
export function clip(x: string, n = 60): string {
  return x.length > n ? `${x.slice(0, n - 1)}…` : x;
}
