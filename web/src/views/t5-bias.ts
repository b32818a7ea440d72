/**
 * The Translate view's picture of a T5 folder's positions (issue 59, point 4): T5 adds no position encoding to its
 * embeddings; each self-attention adds a learned scalar per head for each (query, key) offset, binned into buckets,
 * from a table its stack's first layer owns (src/viz/seq2seq-hf-attention.ts). Two pictures per stack (the encoder's
 * looks both ways, the decoder's back only): every head's bias by offset, a row per head, and the chosen head's bias
 * over the text's positions, query × key. Drawn in pieces (paced.ts), so a long text never blocks the page.
 */
import { heatmapPieces } from '../../../src/viz/heatmap.ts';
import { t5BiasMapOptions, t5BiasOffsetsOptions, type T5PositionBias } from '../../../src/viz/seq2seq-hf-attention.ts';
import { field, h, select, setOptions } from '../dom.ts';
import { figureBox, hideFigure, showFigureInPieces } from '../figures.ts';

export interface T5BiasPanel {
  element: HTMLElement;
  /** Draw this translation's biases (null: not a T5, the panel hidden). */
  show(bias: { encoder: T5PositionBias; decoder: T5PositionBias | null } | null, tokens: TokensOf): void;
}

/** The tokens of each stack's positions: the source's, and the decoder's input. */
export interface TokensOf {
  encoder: readonly string[];
  decoder: readonly string[];
}

export function t5BiasPanel(): T5BiasPanel {
  const stack = select('t5-bias-stack', [
    ['encoder', 'encoder self-attention'],
    ['decoder', 'decoder self-attention'],
  ]);
  const head = select('t5-bias-head', [['0', 'head 1']]);
  const offsets = figureBox('t5-bias-offsets');
  const map = figureBox('t5-bias-map');
  const element = h(
    'section',
    { class: 'panel', id: 't5-bias', 'data-testid': 't5-bias', hidden: true },
    h('h3', { text: "Positions: T5's relative position bias" }),
    h('p', {
      class: 'muted',
      text:
        'T5 adds no position encoding to its embeddings. Each self-attention adds to the score of query i and key j ' +
        'a learned number per head for the offset j − i: exact for near offsets, one per band of offsets further ' +
        'away (log-spaced buckets), one beyond the last. Every layer of a stack reuses its first layer’s table. ' +
        'Cross-attention has none.',
    }),
    h('div', { class: 'row' }, field('Stack', stack), field('Head', head)),
    offsets,
    map,
  );
  let shown: { encoder: T5PositionBias; decoder: T5PositionBias | null } | null = null;
  let tokens: TokensOf = { encoder: [], decoder: [] };
  const draw = () => {
    const b = shown && (stack.value === 'decoder' ? shown.decoder : shown.encoder);
    if (!b) {
      hideFigure(offsets, 't5-bias-offsets');
      hideFigure(map, 't5-bias-map');
      return;
    }
    setOptions(
      head,
      b.maps.map((_, a) => [String(a), `head ${a + 1}`] as const),
    );
    const hd = Number(head.value);
    const title = `${b.stack} relative position bias`;
    void showFigureInPieces(
      offsets,
      { id: 't5-bias-offsets', view: 'Translate', title: `${title}: every head by offset` },
      heatmapPieces(t5BiasOffsetsOptions(b)),
    );
    void showFigureInPieces(
      map,
      { id: 't5-bias-map', view: 'Translate', title: `${title} · head ${hd + 1}` },
      heatmapPieces(t5BiasMapOptions(b, hd, tokens[b.stack])),
    );
  };
  stack.addEventListener('change', draw);
  head.addEventListener('change', draw);
  return {
    element,
    show(bias, t) {
      shown = bias;
      tokens = t;
      element.hidden = bias === null;
      draw();
    },
  };
}
