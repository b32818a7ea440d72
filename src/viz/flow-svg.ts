/**
 * Pictures of a flow's stages (viz/flow.ts): a stage's vectors as a heatmap strip per token (tokens
 * down, components across, red below 0, blue above (RdBu), scaled to the stage's largest |x|), one head's
 * attention as the attention heatmap (attention-maps.ts), as SVG strings like the rest of viz/; and the
 * colours of a stage's thumbnail for the flow's columns.
 */
import type { FlowStage, ModelFlow } from './flow-core.ts';
import type { FlowStageOutline } from './flow.ts';
import { mapsHeatmapSvg, type AttentionMaps } from './attention-maps.ts';
import { blues, rdbu } from './color.ts';
import { heatmapSvg } from './heatmap.ts';

/** What the pictures read of a flow: its tokens (a ModelFlow, or its outline). */
export type FlowAxes = Pick<ModelFlow, 'axes'>;

/** The tokens of the stage's rows. */
export function stageTokens(flow: FlowAxes, stage: FlowStage): string[] {
  return flow.axes[stage.axis]?.tokens ?? stage.rows.map((_, i) => String(i));
}

/** The largest |x| of the rows' leading components (or of `values`), at least a tiny positive number. */
function extent(values: readonly (readonly number[])[]): number {
  let m = 0;
  for (const r of values) for (const v of r) if (Number.isFinite(v)) m = Math.max(m, Math.abs(v));
  return m > 0 ? m : 1e-12;
}

/**
 * A stage's vectors as a heatmap: one row per token, one column per component: the leading `dims` the
 * flow keeps, or every component when `values` ([token][component], from FlowRun.vectors) is given.
 */
export function flowVectorsSvg(
  flow: FlowAxes,
  stage: FlowStage,
  values: readonly (readonly number[])[] = stage.rows.map((r) => r.head),
): string {
  const cols = values[0]?.length ?? 0;
  const m = extent(values);
  const cell = cols > 64 ? 6 : cols > 24 ? 10 : 18;
  const shown = cols < stage.width ? `first ${cols} of ${stage.width}` : `all ${stage.width}`;
  return heatmapSvg({
    values,
    rowLabels: stageTokens(flow, stage),
    colLabels: Array.from({ length: cols }, (_, j) => String(j)),
    title: `${stage.title} · ${stage.group} · ${shown} components`,
    xLabel: 'component',
    min: -m,
    max: m,
    scale: 'rdbu',
    cellWidth: cell,
    cellHeight: 18,
    showValues: false,
    // Every component of a wide stage: thousands of cells, whose numbers are in the page's table.
    titles: cols <= 64,
    labelEvery: cols > 24 ? 8 : 1,
    className: 'qkv-flow-vectors',
  });
}

/** An attention stage's heads as AttentionMaps (one "layer": this stage), to draw with attention-maps.ts. */
export function flowAttentionMaps(flow: FlowAxes, stage: FlowStage): AttentionMaps {
  if (!stage.heads || !stage.keys) throw new Error(`flow: stage '${stage.id}' is not an attention stage`);
  return {
    name: `${stage.group} · ${stage.title}`,
    maps: [stage.heads.map((h) => h.weights)],
    rows: stageTokens(flow, stage),
    cols: flow.axes[stage.keys]?.tokens ?? [],
    xLabel: 'key (attended to)',
    yLabel: 'query (attending)',
    causal: stage.causal ?? false,
  };
}

/** One head's weights (or their mean) of an attention stage, as the attention heatmap. */
export function flowHeadSvg(flow: FlowAxes, stage: FlowStage, head: number | 'mean'): string {
  const m = flowAttentionMaps(flow, stage);
  const kv = head === 'mean' ? undefined : stage.heads![head]?.kvHead;
  const name = head === 'mean' ? 'mean of heads' : `head ${head + 1}${kv === undefined ? '' : ` · KV ${kv + 1}`}`;
  return mapsHeatmapSvg(m, 0, head, { title: `${m.name} · ${name}` });
}

/**
 * The colours of a stage's thumbnail for its column, [row][column], from its outline (flow.ts
 * flowOutline): the mean of the heads' weights (blues, 0 to 1) for an attention stage, else the tokens'
 * leading components (RdBu, symmetric about 0). A page paints them on a canvas: one element per stage.
 */
export function flowThumbColors(stage: FlowStageOutline): string[][] {
  const m = extent(stage.thumb);
  return stage.kind === 'attention'
    ? stage.thumb.map((r) => r.map((v) => blues(v)))
    : stage.thumb.map((r) => r.map((v) => rdbu((v / m + 1) / 2)));
}
