/**
 * Pictures of a translation's attention (see attention-data.ts): one head's heatmap, a layer's
 * head view, the model view of a kind, and a grid of every layer × head with labels.
 */
import { KIND_NAMES, axisTokens, mapsOf, type AttentionKind, type TranslationAttention } from './attention-data.ts';
import { gridSvg } from './compose.ts';
import { heatmapSvg } from './heatmap.ts';
import { headViewSvg } from './headview.ts';
import { averageHeads, modelViewSvg } from './modelview.ts';

/** Layers and heads of a kind in this translation. */
export function stackSize(t: TranslationAttention, kind: AttentionKind): { layers: number; heads: number } {
  const m = mapsOf(t, kind);
  return { layers: m.length, heads: m[0]?.length ?? 0 };
}

function check(t: TranslationAttention, kind: AttentionKind, layer: number, head: number | 'mean'): void {
  const { layers, heads } = stackSize(t, kind);
  if (layers === 0) throw new Error(`no ${KIND_NAMES[kind]} to draw (the translation is empty)`);
  if (!Number.isInteger(layer) || layer < 0 || layer >= layers) throw new Error(`layer ${layer + 1} does not exist: the ${KIND_NAMES[kind]} has layers 1..${layers}`);
  if (head !== 'mean' && (!Number.isInteger(head) || head < 0 || head >= heads)) throw new Error(`head ${head + 1} does not exist: layers have heads 1..${heads}`);
}

/** The causal mask of decoder self-attention (key after query), null for the other kinds. */
export function kindMask(kind: AttentionKind): ((i: number, j: number) => boolean) | undefined {
  return kind === 'decoder' ? (i, j) => j > i : undefined;
}

export interface AttentionHeatmapOptions {
  cellSize?: number;
  title?: string;
  showValues?: boolean;
}

/** One head's map (0-based layer and head; 'mean' averages the heads), tokens on both axes. */
export function attentionHeatmapSvg(t: TranslationAttention, kind: AttentionKind, layer: number, head: number | 'mean', o: AttentionHeatmapOptions = {}): string {
  check(t, kind, layer, head);
  const { rows, cols } = axisTokens(t, kind);
  const heads = mapsOf(t, kind)[layer];
  const values = head === 'mean' ? averageHeads(heads) : heads[head];
  const fit = (n: number) => Math.max(14, Math.min(36, Math.floor(520 / n)));
  return heatmapSvg({
    values,
    rowLabels: rows,
    colLabels: cols,
    title: o.title ?? `${KIND_NAMES[kind]} · layer ${layer + 1} · ${head === 'mean' ? 'mean of heads' : `head ${head + 1}`}`,
    xLabel: kind === 'decoder' ? 'key: earlier target tokens' : 'key: source tokens',
    yLabel: kind === 'encoder' ? 'query: source tokens' : 'query: target positions',
    min: 0,
    max: 1,
    cellWidth: o.cellSize ?? fit(cols.length),
    cellHeight: o.cellSize ?? fit(rows.length),
    showValues: o.showValues,
    masked: kindMask(kind),
    className: 'qkv-attention',
  });
}

/** bertviz's head view of one layer: every head's lines (or only `heads`). */
export function attentionHeadViewSvg(t: TranslationAttention, kind: AttentionKind, layer: number, heads?: readonly number[], highlight: number | null = null): string {
  check(t, kind, layer, 'mean');
  const { rows, cols } = axisTokens(t, kind);
  const all = mapsOf(t, kind)[layer];
  const ids = heads ?? all.map((_, h) => h);
  ids.forEach((h) => check(t, kind, layer, h));
  return headViewSvg({
    heads: ids.map((h) => all[h]),
    headIds: ids,
    leftLabels: rows,
    rightLabels: cols,
    highlight,
    title: `${KIND_NAMES[kind]} · layer ${layer + 1}`,
  });
}

/** Every layer × head of a kind as thumbnails. */
export function attentionModelViewSvg(t: TranslationAttention, kind: AttentionKind, selected: { layer: number; head: number } | null = null, thumbSize = 96): string {
  if (stackSize(t, kind).layers === 0) throw new Error(`no ${KIND_NAMES[kind]} to draw (the translation is empty)`);
  return modelViewSvg({ maps: mapsOf(t, kind), title: `${KIND_NAMES[kind]}: layers × heads`, selected, thumbSize, masked: kindMask(kind) });
}

/** Labelled heatmaps of the chosen layers × heads (all by default), one row per layer. */
export function attentionGridSvg(t: TranslationAttention, kind: AttentionKind, layers?: readonly number[], heads?: readonly number[]): string {
  const size = stackSize(t, kind);
  const ls = layers ?? Array.from({ length: size.layers }, (_, i) => i);
  const hs = heads ?? Array.from({ length: size.heads }, (_, i) => i);
  const parts: string[] = [];
  for (const l of ls) for (const h of hs) parts.push(attentionHeatmapSvg(t, kind, l, h, { title: `layer ${l + 1} · head ${h + 1}`, cellSize: 22, showValues: false }));
  const clip = (x: string) => (x.length > 60 ? `${x.slice(0, 59)}…` : x);
  return gridSvg(parts, { columns: hs.length, title: `${KIND_NAMES[kind]}: "${clip(t.source)}" → "${clip(t.translation)}"` });
}
