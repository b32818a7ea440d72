/**
 * Pictures of a translation's attention (see attention-data.ts): one head's heatmap, a layer's
 * head view, the model view of a kind, and a grid of every layer × head with labels. Each kind is
 * turned into an AttentionMaps and drawn by attention-maps.ts.
 */
import { KIND_NAMES, axisTokens, mapsOf, type AttentionKind, type TranslationAttention } from './attention-data.ts';
import {
  clip,
  mapsGridSvg,
  mapsHeadViewSvg,
  mapsHeatmapSvg,
  mapsModelViewSvg,
  mapsSize,
  type AttentionHeatmapOptions,
  type AttentionMaps,
} from './attention-maps.ts';

export type { AttentionHeatmapOptions } from './attention-maps.ts';

/** One kind of map of a translation, with its tokens and axis names. */
export function translationMaps(t: TranslationAttention, kind: AttentionKind): AttentionMaps {
  const { rows, cols } = axisTokens(t, kind);
  return {
    name: KIND_NAMES[kind],
    maps: mapsOf(t, kind),
    rows,
    cols,
    xLabel: kind === 'decoder' ? 'key: earlier target tokens' : 'key: source tokens',
    yLabel: kind === 'encoder' ? 'query: source tokens' : 'query: target positions',
    causal: kind === 'decoder',
    emptyReason: 'the translation is empty',
  };
}

/** Layers and heads of a kind in this translation. */
export function stackSize(
  t: TranslationAttention,
  kind: AttentionKind,
): {
  /** Number of layers (0 when the translation is empty and the kind is a decoder one). */
  layers: number;
  /** Heads per layer. */
  heads: number;
} {
  return mapsSize(translationMaps(t, kind));
}

/** The causal mask of decoder self-attention (key after query), null for the other kinds. */
export function kindMask(kind: AttentionKind): ((i: number, j: number) => boolean) | undefined {
  return kind === 'decoder' ? (i, j) => j > i : undefined;
}

/** One head's map (0-based layer and head; 'mean' averages the heads), tokens on both axes. */
export function attentionHeatmapSvg(
  t: TranslationAttention,
  kind: AttentionKind,
  layer: number,
  head: number | 'mean',
  o: AttentionHeatmapOptions = {},
): string {
  return mapsHeatmapSvg(translationMaps(t, kind), layer, head, o);
}

/** bertviz's head view of one layer: every head's lines (or only `heads`). */
export function attentionHeadViewSvg(
  t: TranslationAttention,
  kind: AttentionKind,
  layer: number,
  heads?: readonly number[],
  highlight: number | null = null,
): string {
  return mapsHeadViewSvg(translationMaps(t, kind), layer, heads, highlight);
}

/** Every layer × head of a kind as thumbnails. */
export function attentionModelViewSvg(
  t: TranslationAttention,
  kind: AttentionKind,
  selected: { layer: number; head: number } | null = null,
  thumbSize = 96,
): string {
  return mapsModelViewSvg(translationMaps(t, kind), selected, thumbSize);
}

/** Labelled heatmaps of the chosen layers × heads (all by default), one row per layer. */
export function attentionGridSvg(
  t: TranslationAttention,
  kind: AttentionKind,
  layers?: readonly number[],
  heads?: readonly number[],
): string {
  return mapsGridSvg(
    translationMaps(t, kind),
    `${KIND_NAMES[kind]}: "${clip(t.source)}" → "${clip(t.translation)}"`,
    layers,
    heads,
  );
}
