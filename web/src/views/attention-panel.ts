/**
 * The attention pictures of a model view (Translate, Generate): layer and head selectors, the
 * heatmap of one head (values on hover; click a row to follow that token in the head view), the
 * head view of a layer and the model view of every layer × head (click a thumbnail to open it).
 */
import {
  mapsHeadViewSvg,
  mapsHeatmapSvg,
  mapsModelViewSvg,
  mapsSize,
  type AttentionMaps,
} from '../../../src/viz/attention-maps.ts';
import { field, h, select, setOptions } from '../dom.ts';
import { figureBox, hideFigure, showFigure } from '../figures.ts';

export interface AttentionPanel {
  /** What to append to the view, in order: the controls, a hint, the figures. */
  elements: HTMLElement[];
  /** Show these maps (null: nothing yet); forgets the followed row, keeps the layer and head when they exist. */
  show(maps: AttentionMaps | null): void;
}

/** `view` names the figures' view in the Export list; `extra` fields go first in the controls row. */
export function attentionPanel(view: string, extra: HTMLElement[] = []): AttentionPanel {
  const layer = select('layer', []);
  const head = select('head', []);
  const allHeads = h('input', { type: 'checkbox', id: 'all-heads', checked: true });
  const controls = h(
    'div',
    { class: 'row controls', id: 'attn-controls', hidden: true },
    ...extra,
    field('Layer', layer),
    field('Head', head),
    field('Head view: all heads', allHeads),
  );
  const figHeat = figureBox('heatmap');
  const figHead = figureBox('headview');
  const figModel = figureBox('modelview');
  const hint = h('p', {
    class: 'muted hint',
    hidden: true,
    text:
      'Hover a cell for its value. Click a row to follow that token in the ' +
      'head view; click a thumbnail of the model view to open that head.',
  });

  let current: AttentionMaps | null = null;
  let highlight: number | null = null;

  const fillSelectors = (m: AttentionMaps) => {
    const { layers, heads } = mapsSize(m);
    const first = head.options.length === 0;
    setOptions(
      layer,
      Array.from({ length: layers }, (_, i) => [String(i), `layer ${i + 1}`] as const),
    );
    setOptions(head, [
      ['mean', 'mean of heads'] as const,
      ...Array.from({ length: heads }, (_, i) => [String(i), `head ${i + 1}`] as const),
    ]);
    if (first && heads > 0) head.value = '0';
  };

  const draw = () => {
    const m = current;
    if (!m || mapsSize(m).layers === 0) {
      for (const [el, id] of [
        [figHeat, 'heatmap'],
        [figHead, 'headview'],
        [figModel, 'modelview'],
      ] as const)
        hideFigure(el, id);
      return;
    }
    const l = Number(layer.value);
    const hd = head.value === 'mean' ? 'mean' : Number(head.value);
    showFigure(figHeat, {
      id: 'heatmap',
      view,
      title: `${m.name}, layer ${l + 1}, ${hd === 'mean' ? 'mean of heads' : `head ${hd + 1}`}`,
      svg: mapsHeatmapSvg(m, l, hd),
    });
    const ids = allHeads.checked || hd === 'mean' ? undefined : [hd];
    showFigure(figHead, {
      id: 'headview',
      view,
      title: `head view: ${m.name}, layer ${l + 1}`,
      svg: mapsHeadViewSvg(m, l, ids, highlight),
    });
    showFigure(figModel, {
      id: 'modelview',
      view,
      title: `model view: ${m.name}`,
      svg: mapsModelViewSvg(m, hd === 'mean' ? null : { layer: l, head: hd }),
    });
  };

  layer.addEventListener('change', draw);
  head.addEventListener('change', draw);
  allHeads.addEventListener('change', draw);
  figHeat.addEventListener('click', (e) => {
    const cell = (e.target as Element).closest('[data-row]');
    if (!cell) return;
    const r = Number(cell.getAttribute('data-row'));
    highlight = highlight === r ? null : r;
    draw();
  });
  figModel.addEventListener('click', (e) => {
    const g = (e.target as Element).closest('.thumb');
    if (!g) return;
    layer.value = g.getAttribute('data-layer')!;
    head.value = g.getAttribute('data-head')!;
    draw();
  });

  return {
    elements: [controls, hint, h('div', { class: 'figs' }, figHeat, figHead), figModel],
    show(maps) {
      current = maps;
      highlight = null;
      controls.hidden = maps === null;
      hint.hidden = maps === null;
      if (maps) fillSelectors(maps);
      draw();
    },
  };
}
