/**
 * Drawing attention: pure functions from numbers to SVG strings (heatmaps with token labels,
 * positional encodings, the head view, the model view), the step-by-step attention arithmetic,
 * and the extraction of every attention map from a translation. No DOM, no Node APIs.
 */
export { heatmapSvg, colorBar, MASKED_FILL, type HeatmapOptions } from './heatmap.ts';
export { headViewSvg, type HeadViewOptions } from './headview.ts';
export { modelViewSvg, averageHeads, type ModelViewOptions } from './modelview.ts';
export { lineChartSvg, niceTicks, type LineChartOptions, type Series } from './linechart.ts';
export {
  positionalEncoding,
  positionalHeatmapSvg,
  positionalCurvesSvg,
  type PositionalHeatmapOptions,
  type PositionalCurvesOptions,
} from './positional.ts';
export {
  blues,
  rdbu,
  interpolateStops,
  luminance,
  textColorOn,
  headColor,
  scaleByName,
  BLUES_STOPS,
  RDBU_STOPS,
  HEAD_COLORS,
  type ColorScale,
  type ScaleName,
} from './color.ts';
export { esc, formatValue, px, textWidth } from './svg.ts';
export { gridSvg, standaloneHtml } from './compose.ts';
export {
  attentionSteps,
  multiHeadSteps,
  splitHeads,
  concatHeads,
  headCounts,
  matmul,
  transpose,
  softmaxRows,
  SEED_002,
  SEED_003,
  WORKED_EXAMPLES,
  type Matrix,
  type AttentionSteps,
  type MultiHeadSteps,
  type WorkedExample,
  type AttentionStepsOptions,
} from './steps.ts';
export {
  translateWithAttention,
  translateWithAttentionAsync,
  encoderAttention,
  loadModelFromFiles,
  axisTokens,
  mapsOf,
  headsOf,
  headsOfAsync,
  modelKind,
  KIND_NAMES,
  MODEL_FORMATS,
  type TranslationAttention,
  type AttentionStack,
  type AttentionKind,
  type TranslateOptions,
  type ModelKind,
} from './attention-data.ts';
export {
  mapsHeatmapSvg,
  mapsHeadViewSvg,
  mapsModelViewSvg,
  mapsGridSvg,
  mapsSize,
  causalMask,
  type AttentionMaps,
  type AttentionHeatmapOptions,
} from './attention-maps.ts';
export {
  attentionHeatmapSvg,
  attentionHeadViewSvg,
  attentionModelViewSvg,
  attentionGridSvg,
  translationMaps,
  stackSize,
  kindMask,
} from './translation.ts';
export {
  generateWithAttention,
  generateWithAttentionAsync,
  causalAttention,
  causalAttentionAsync,
  loadGptFromFiles,
  lineSeparatorId,
  tokenLabel,
  gptMaps,
  gptTitle,
  GPT_ATTENTION_NAME,
  type GptAttention,
  type GenerateAttentionOptions,
  type LoadedGpt,
  type GptTokenizer,
} from './gpt-attention.ts';
