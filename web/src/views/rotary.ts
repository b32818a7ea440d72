/**
 * The Generate view's picture of a Llama-family decoder's positions (issue 58, point 4): the rotary angles of the
 * tokens on screen (src/viz/rotary.ts), cos(t·θᵢ) per position and feature pair, and what grouped-query
 * attention shares: which query heads read which KV head (the head selectors name each head's KV head too).
 * Hidden for a model with learned or sinusoidal positions and its own KV per head.
 */
import { rotaryAngles, rotaryHeatmapSvg } from '../../../src/viz/rotary.ts';
import { h } from '../dom.ts';
import { figureBox, hideFigure, showFigure } from '../figures.ts';
import type { GptInfo } from '../model-worker.ts';

export interface RotaryPanel {
  element: HTMLElement;
  /** Describe this model (what its heads share), and draw its angles over these tokens. */
  show(info: GptInfo, tokens: readonly string[]): void;
  clear(): void;
}

/** Which query heads share each KV head: 'heads 1–2 share KV head 1, …' (empty without grouped-query attention). */
export function kvSharing(nHead: number, nKVHead: number): string {
  if (nKVHead >= nHead) return '';
  const g = nHead / nKVHead;
  const groups = Array.from({ length: nKVHead }, (_, k) =>
    g === 1 ? `head ${k + 1}` : `heads ${k * g + 1}–${(k + 1) * g} share KV head ${k + 1}`,
  );
  return `Grouped-query attention: ${nHead} query heads, ${nKVHead} key/value heads; ${groups.join(', ')}.`;
}

export function rotaryPanel(): RotaryPanel {
  const sharing = h('p', { class: 'muted', id: 'gpt-kv-sharing', 'data-testid': 'gpt-kv-sharing' });
  const fig = figureBox('gpt-rotary');
  const element = h(
    'section',
    { class: 'panel', id: 'gpt-positions', hidden: true },
    h('h3', { text: 'Positions: rotary angles' }),
    sharing,
    h('p', {
      class: 'muted',
      text:
        'Position t turns feature pair i of every query and key by the angle t·θᵢ before they meet, so their ' +
        'product depends only on how far apart they are. Fast pairs (left) turn a full circle every few ' +
        'positions, slow ones (right) barely move.',
    }),
    fig,
  );
  return {
    element,
    show(info, tokens) {
      sharing.textContent = kvSharing(info.nHead, info.nKVHead);
      sharing.hidden = sharing.textContent === '';
      if (!info.rotary) {
        element.hidden = sharing.hidden;
        hideFigure(fig, 'gpt-rotary');
        return;
      }
      element.hidden = false;
      const r = rotaryAngles(info.rotary, tokens.length);
      showFigure(fig, { id: 'gpt-rotary', view: 'Generate', title: 'rotary angles', svg: rotaryHeatmapSvg(r, tokens) });
    },
    clear() {
      element.hidden = true;
      hideFigure(fig, 'gpt-rotary');
    },
  };
}
