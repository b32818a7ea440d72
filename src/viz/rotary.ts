/**
 * A picture of a Llama-family decoder's rotary positions (RoPE, nn/rotary.ts): position t turns feature pair i of
 * every query and key head by the angle t·θ_i, θ_i = base^(−2i/D) (rescaled as the folder's rope scaling says), so
 * a query–key product depends only on how far apart they are. The heatmap shows cos(t·θ_i) per position (rows)
 * and pair (columns), each cell titled with its value: fast pairs on the left turn a full circle every few
 * positions, slow ones on the right barely move. The angles are the model's own (its inverse frequencies, the
 * products rounded to float32 as transformers rounds them).
 */
import type { GPTConfig } from '../models/gpt-config.ts';
import { ropeInverseFrequencies } from '../nn/rotary.ts';
import { heatmapSvg } from './heatmap.ts';

/** The rotary angles of a model over some positions. */
export interface RotaryAngles {
  /** Per-head width D: D/2 pairs are turned. */
  headDim: number;
  /** rope_theta. */
  base: number;
  /** The rescaling's name ('default', 'linear', 'llama3'). */
  scaling: string;
  /** θ_i, i = 0 .. D/2 − 1 (radians per position). */
  inverseFrequencies: number[];
  /** [position][pair]: t·θ_i in radians, float32 as the model computes it. */
  angles: number[][];
}

/** The angles of positions 0 .. positions − 1 of a rotary model (positions 'rotary'); an Error for another. */
export function rotaryAngles(
  config: Pick<GPTConfig, 'positions' | 'headDim' | 'nEmbd' | 'nHead' | 'rope'>,
  positions: number,
): RotaryAngles {
  if (config.positions !== 'rotary')
    throw new Error(`rotaryAngles: the model's positions are '${config.positions ?? 'learned'}', not 'rotary'`);
  if (!Number.isInteger(positions) || positions < 1)
    throw new Error(`rotaryAngles: positions must be a whole number >= 1, got ${positions}`);
  const headDim = config.headDim ?? config.nEmbd / config.nHead;
  const base = config.rope?.base ?? 10000;
  const scaling = config.rope?.scaling ?? { type: 'default' as const };
  const inv = ropeInverseFrequencies(headDim, base, scaling);
  return {
    headDim,
    base,
    scaling: scaling.type,
    inverseFrequencies: Array.from(inv),
    angles: Array.from({ length: positions }, (_, t) => Array.from(inv, (th) => Math.fround(t * th))),
  };
}

/** The heatmap of cos(t·θ_i): a row per position (labelled with its token where given), a column per pair. */
export function rotaryHeatmapSvg(r: RotaryAngles, tokens?: readonly string[]): string {
  const pairs = r.inverseFrequencies.length;
  const rows = r.angles.length;
  const cw = Math.max(4, Math.min(24, Math.floor(640 / pairs)));
  const ch = Math.max(4, Math.min(18, Math.floor(480 / rows)));
  return heatmapSvg({
    values: r.angles.map((row) => row.map((a) => Math.cos(a))),
    rowLabels: r.angles.map((_, t) => (tokens?.[t] !== undefined ? `${t} ${tokens[t]}` : String(t))),
    colLabels: r.inverseFrequencies.map((_, i) => String(i)),
    title:
      `rotary angles: cos(t·θᵢ), θᵢ = ${r.base}^(−2i/${r.headDim})` +
      (r.scaling === 'default' ? '' : `, ${r.scaling} scaling`),
    xLabel: 'feature pair i (fast → slow)',
    yLabel: 'position t',
    min: -1,
    max: 1,
    scale: 'rdbu',
    cellWidth: cw,
    cellHeight: ch,
    titles: rows * pairs <= 20000,
    className: 'qkv-rotary',
  });
}
