/**
 * The attention pictures of a model view (Translate, Generate): layer and head selectors, the
 * heatmap of one head (values on hover; click a row to follow that token in the head view), the
 * head view of a layer and the model view of every layer × head (click a thumbnail to open it).
 * By keyboard: the heatmap is one tab stop whose arrow keys move between cells (each read out as
 * its tokens and value), Enter follows the cell's row; each thumbnail is a button.
 */
import {
  mapsHeadViewSvg,
  mapsHeatmapSvg,
  mapsModelViewSvg,
  mapsSize,
  type AttentionMaps,
} from '../../../src/viz/attention-maps.ts';
import { THUMB_FRAME } from '../../../src/viz/modelview.ts';
import { field, h, select, setOptions } from '../dom.ts';
import { figureBox, hideFigure, keyboardCells, showFigure, updateFigure } from '../figures.ts';

export interface AttentionPanel {
  /** What to append to the view, in order: the controls, a hint, the figures. */
  elements: HTMLElement[];
  /** Show these maps (null: nothing yet); forgets the followed row, keeps the layer and head when they exist. */
  show(maps: AttentionMaps | null): void;
}

/**
 * `view` names the figures' view in the Export list; `prefix` goes before every id of the panel (its
 * controls and figures), so that two views' panels are told apart on the page and in the Export list;
 * `extra` fields go first in the controls row.
 */
export function attentionPanel(view: string, prefix = '', extra: HTMLElement[] = []): AttentionPanel {
  const layer = select(`${prefix}layer`, []);
  const head = select(`${prefix}head`, []);
  const allHeads = h('input', { type: 'checkbox', id: `${prefix}all-heads`, checked: true });
  const controls = h(
    'div',
    { class: 'row controls', id: `${prefix}attn-controls`, hidden: true },
    ...extra,
    field('Layer', layer),
    field('Head', head),
    field('Head view: all heads', allHeads),
  );
  const ids = { heatmap: `${prefix}heatmap`, headview: `${prefix}headview`, modelview: `${prefix}modelview` };
  const figHeat = figureBox(ids.heatmap);
  const figHead = figureBox(ids.headview);
  const figModel = figureBox(ids.modelview);
  const hint = h('p', {
    class: 'muted hint',
    hidden: true,
    text:
      'Hover a cell for its value, or tab to the map and move with the arrow keys. Click a row (Enter) to follow ' +
      'that token in the head view; click a thumbnail of the model view (Enter) to open that head.',
  });

  let current: AttentionMaps | null = null;
  let highlight: number | null = null;
  /**
   * The maps the model view on screen shows: every layer × head, tens of thousands of cells for a long
   * text. Choosing another layer or head only moves its selection frame, in place.
   */
  let modelViewOf: AttentionMaps | null = null;
  /** The heatmap cell that has the keyboard (row, column), kept across redraws while it exists. */
  let focused: [number, number] | null = null;

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
      modelViewOf = null;
      for (const [el, id] of [
        [figHeat, ids.heatmap],
        [figHead, ids.headview],
        [figModel, ids.modelview],
      ] as const)
        hideFigure(el, id);
      return;
    }
    const l = Number(layer.value);
    const hd = head.value === 'mean' ? 'mean' : Number(head.value);
    showFigure(figHeat, {
      id: ids.heatmap,
      view,
      title: `${m.name}, layer ${l + 1}, ${hd === 'mean' ? 'mean of heads' : `head ${hd + 1}`}`,
      svg: mapsHeatmapSvg(m, l, hd),
    });
    keyboardCells(figHeat, focused);
    const shown = allHeads.checked || hd === 'mean' ? undefined : [hd];
    showFigure(figHead, {
      id: ids.headview,
      view,
      title: `head view: ${m.name}, layer ${l + 1}`,
      svg: mapsHeadViewSvg(m, l, shown, highlight),
    });
    const selected = hd === 'mean' ? null : { layer: l, head: hd };
    if (modelViewOf === m) {
      let svg: string | undefined;
      updateFigure(figModel, {
        id: ids.modelview,
        view,
        title: `model view: ${m.name}`,
        get svg() {
          svg ??= mapsModelViewSvg(m, selected);
          return svg;
        },
      });
      for (const g of figModel.querySelectorAll('.thumb')) {
        const on =
          selected !== null && g.getAttribute('data-layer') === String(l) && g.getAttribute('data-head') === String(hd);
        g.classList.toggle('selected', on);
        const frame = on ? THUMB_FRAME.selected : THUMB_FRAME.plain;
        g.querySelector('.frame')?.setAttribute('stroke', frame.stroke);
        g.querySelector('.frame')?.setAttribute('stroke-width', String(frame.width));
      }
      return;
    }
    showFigure(figModel, {
      id: ids.modelview,
      view,
      title: `model view: ${m.name}`,
      svg: mapsModelViewSvg(m, selected),
    });
    modelViewOf = m;
    for (const g of figModel.querySelectorAll('.thumb')) {
      g.setAttribute('tabindex', '0');
      g.setAttribute('role', 'button');
      g.setAttribute(
        'aria-label',
        `layer ${Number(g.getAttribute('data-layer')) + 1}, head ${Number(g.getAttribute('data-head')) + 1}`,
      );
    }
  };

  layer.addEventListener('change', draw);
  head.addEventListener('change', draw);
  allHeads.addEventListener('change', draw);
  const follow = (cell: Element) => {
    const r = Number(cell.getAttribute('data-row'));
    highlight = highlight === r ? null : r;
    const refocus = cell === document.activeElement;
    draw();
    if (refocus) figHeat.querySelector<SVGElement>('rect.cell[tabindex="0"]')?.focus();
  };
  figHeat.addEventListener('click', (e) => {
    const cell = (e.target as Element).closest('[data-row]');
    if (cell) follow(cell);
  });
  figHeat.addEventListener('keydown', (e) => {
    const cell = (e.target as Element).closest('rect.cell');
    if (!cell) return;
    if (e.key === 'Enter' || e.key === ' ') {
      e.preventDefault();
      follow(cell);
    }
  });
  figHeat.addEventListener('focusin', (e) => {
    const cell = (e.target as Element).closest('rect.cell');
    if (cell) focused = [Number(cell.getAttribute('data-row')), Number(cell.getAttribute('data-col'))];
  });
  const open = (g: Element) => {
    layer.value = g.getAttribute('data-layer')!;
    head.value = g.getAttribute('data-head')!;
    draw();
  };
  figModel.addEventListener('click', (e) => {
    const g = (e.target as Element).closest('.thumb');
    if (g) open(g);
  });
  figModel.addEventListener('keydown', (e) => {
    const g = (e.target as Element).closest('.thumb');
    if (!g || (e.key !== 'Enter' && e.key !== ' ')) return;
    e.preventDefault();
    const [l, hd] = [g.getAttribute('data-layer'), g.getAttribute('data-head')];
    open(g);
    figModel.querySelector<SVGElement>(`.thumb[data-layer="${l}"][data-head="${hd}"]`)?.focus();
  });

  return {
    elements: [controls, hint, h('div', { class: 'figs' }, figHeat, figHead), figModel],
    show(maps) {
      current = maps;
      highlight = null;
      focused = null;
      controls.hidden = maps === null;
      hint.hidden = maps === null;
      if (maps) fillSelectors(maps);
      draw();
    },
  };
}
