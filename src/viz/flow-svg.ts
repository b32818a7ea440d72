/**
 * Pictures of a flow's stages (viz/flow.ts): a stage's vectors as a heatmap strip per token (tokens
 * down, components across, red below 0, blue above (RdBu), scaled to the stage's largest |x|), one head's
 * attention as the attention heatmap (attention-maps.ts), and a small thumbnail of a stage for the
 * flow's columns. SVG strings, as the rest of viz/.
 */
import type { FlowStage, ModelFlow } from './flow-core.ts';
import { mapsHeatmapSvg, type AttentionMaps } from './attention-maps.ts';
import { averageHeads } from './modelview.ts';
import { blues, rdbu } from './color.ts';
import { heatmapSvg } from './heatmap.ts';
import { esc, px } from './svg.ts';

/** The tokens of the stage's rows. */
export function stageTokens(flow: ModelFlow, stage: FlowStage): string[] {
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
  flow: ModelFlow,
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
    labelEvery: cols > 24 ? 8 : 1,
    className: 'qkv-flow-vectors',
  });
}

/** An attention stage's heads as AttentionMaps (one "layer": this stage), to draw with attention-maps.ts. */
export function flowAttentionMaps(flow: ModelFlow, stage: FlowStage): AttentionMaps {
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
export function flowHeadSvg(flow: ModelFlow, stage: FlowStage, head: number | 'mean'): string {
  const m = flowAttentionMaps(flow, stage);
  return mapsHeatmapSvg(m, 0, head, {
    title: `${m.name} · ${head === 'mean' ? 'mean of heads' : `head ${head + 1}`}`,
  });
}

/**
 * A small picture of a stage for its column: the mean of the heads' weights for an attention stage,
 * else the tokens' leading components (at most 16), `w` × `h` px, no labels.
 */
export function flowThumbSvg(stage: FlowStage, w = 96, h = 40): string {
  const attention = stage.heads !== undefined && stage.heads.length > 0;
  const values = attention
    ? averageHeads(stage.heads!.map((x) => x.weights))
    : stage.rows.map((r) => r.head.slice(0, 16));
  const rows = values.length;
  const cols = values[0]?.length ?? 0;
  const m = extent(values);
  const cw = w / Math.max(1, cols);
  const ch = h / Math.max(1, rows);
  const out = [
    `<svg xmlns="http://www.w3.org/2000/svg" class="qkv-flow-thumb" width="${w}" height="${h}" ` +
      `viewBox="0 0 ${w} ${h}" aria-hidden="true" data-rows="${rows}" data-cols="${cols}">`,
  ];
  for (let i = 0; i < rows; i++) {
    for (let j = 0; j < cols; j++) {
      const v = values[i][j];
      const fill = attention ? blues(v) : rdbu((v / m + 1) / 2);
      out.push(
        `<rect x="${px(j * cw)}" y="${px(i * ch)}" width="${px(cw + 0.3)}" height="${px(ch + 0.3)}" ` +
          `fill="${esc(fill)}"/>`,
      );
    }
  }
  out.push('</svg>');
  return out.join('');
}
