/**
 * The attention pictures of a model view (Translate, Generate): layer and head selectors, the
 * heatmap of one head (values on hover; click a row to follow that token in the head view), the
 * head view of a layer and the model view of every layer × head (click a thumbnail to open it).
 * By keyboard: the heatmap is one tab stop whose arrow keys move between cells (each read out as
 * its tokens and value), Enter follows the cell's row; each thumbnail is a button.
 */
import {
  mapsHeadViewPieces,
  mapsHeatmapPieces,
  mapsModelViewSvg,
  mapsSize,
  mapsThumbPixels,
  type AttentionMaps,
} from '../../../src/viz/attention-maps.ts';
import { modelViewRows, THUMB_FRAME } from '../../../src/viz/modelview.ts';
import { field, h, select, setOptions } from '../dom.ts';
import { figureBox, hideFigure, keyboardCells, showFigure, showFigureInPieces, updateFigure } from '../figures.ts';
import { type Paced, paced } from '../paced.ts';
import { canvasCells, onCanvas } from './heatmap-canvas.ts';
import { canvasLinks, HEADVIEW_SVG_LINES } from './headview-canvas.ts';

const SVG_NS = 'http://www.w3.org/2000/svg';

/**
 * Paints the cells of a model-view thumbnail (`g`, drawn by mapsModelViewSvg without its cells) as an image of a
 * pixel per cell, the colours its rects have in the exported SVG, scaled to its frame: one element in place of
 * rows × cols rects (a 512-token text's 144 thumbnails would be 37 million).
 */
function paintThumb(m: AttentionMaps, g: SVGGElement): void {
  const frame = g.querySelector('rect.frame');
  if (!frame || g.dataset.drawn) return;
  const { width, height, data } = mapsThumbPixels(m, Number(g.dataset.layer), Number(g.dataset.head));
  const canvas = document.createElement('canvas');
  canvas.width = width;
  canvas.height = height;
  canvas.getContext('2d')!.putImageData(new ImageData(data as Uint8ClampedArray<ArrayBuffer>, width, height), 0, 0);
  const img = document.createElementNS(SVG_NS, 'image');
  for (const a of ['x', 'y', 'width', 'height']) img.setAttribute(a, frame.getAttribute(a) ?? '0');
  img.setAttribute('preserveAspectRatio', 'none');
  // A data URL, not a blob: the view saved as HTML keeps it.
  img.setAttribute('href', canvas.toDataURL('image/png'));
  // Cells of a pixel or more stay sharp squares, as rects are; smaller ones are averaged.
  if (Number(frame.getAttribute('width')) >= width && Number(frame.getAttribute('height')) >= height)
    img.style.imageRendering = 'pixelated';
  g.insertBefore(img, frame);
  g.dataset.drawn = 'true';
}

/** The model view's thumbnails in one piece of its drawing, at most (a layer row at least). */
const MODELVIEW_THUMBS_PER_PIECE = 32;

/** The model view's layer rows (modelViewRows) joined in pieces of whole rows, MODELVIEW_THUMBS_PER_PIECE at most. */
function rowPieces(rows: string[], heads: number): string[] {
  const per = Math.max(1, Math.floor(MODELVIEW_THUMBS_PER_PIECE / Math.max(1, heads)));
  const out: string[] = [];
  for (let i = 0; i < rows.length; i += per) out.push(rows.slice(i, i + per).join(''));
  return out;
}

/** A head's name in the selector: with grouped-query attention, the KV head its group shares. */
function headLabel(i: number, heads: number, kvHeads: number | undefined): string {
  if (!kvHeads || kvHeads >= heads) return `head ${i + 1}`;
  return `head ${i + 1} · KV ${Math.floor(i / (heads / kvHeads)) + 1}`;
}

export interface AttentionPanel {
  /** What to append to the view, in order: the controls, a hint, the figures. */
  elements: HTMLElement[];
  /**
   * Show these maps (null: nothing yet); forgets the followed row, keeps the layer and head when they exist.
   * Resolves when the heatmap and the head view are drawn (the model view's thumbnails are painted as they
   * come on screen).
   */
  show(maps: AttentionMaps | null): Promise<void>;
}

/**
 * `view` names the figures' view in the Export list; `prefix` goes before every id of the panel (its
 * controls and figures), so that two views' panels are told apart on the page and in the Export list;
 * `extra` fields go first in the controls row; `options.allHeads`: whether the head view starts with every head
 * (default true).
 */
export function attentionPanel(
  view: string,
  prefix = '',
  extra: HTMLElement[] = [],
  options: { allHeads?: boolean } = {},
): AttentionPanel {
  const layer = select(`${prefix}layer`, []);
  const head = select(`${prefix}head`, []);
  const allHeads = h('input', { type: 'checkbox', id: `${prefix}all-heads`, checked: options.allHeads ?? true });
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
  /** Whether the model view's thumbnails are still being inserted, a layer row a piece. */
  let modelRowsPending = false;
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
      ...Array.from({ length: heads }, (_, i) => [String(i), headLabel(i, heads, m.kvHeads)] as const),
    ]);
    if (first && heads > 0) head.value = '0';
  };

  /** Paints the model view's thumbnails as they come on screen (see paintThumb). */
  let thumbsSeen: IntersectionObserver | null = null;
  /** The thumbnails waiting to be painted, or being painted. */
  const thumbJobs: Paced[] = [];
  const stopThumbs = () => {
    thumbsSeen?.disconnect();
    thumbsSeen = null;
    for (const j of thumbJobs) j.cancel();
    thumbJobs.length = 0;
  };

  /**
   * Draw what the selectors say: the heatmap and the head view in pieces (paced.ts), the model view as its frame
   * at once, each thumbnail's cells painted when it comes near the screen. Resolves when the heatmap and the head
   * view are whole (or replaced). `refocus`: give the heatmap's tab stop the focus once it is drawn.
   */
  const draw = (refocus = false): Promise<unknown> => {
    const m = current;
    if (!m || mapsSize(m).layers === 0) {
      modelViewOf = null;
      stopThumbs();
      for (const [el, id] of [
        [figHeat, ids.heatmap],
        [figHead, ids.headview],
        [figModel, ids.modelview],
      ] as const)
        hideFigure(el, id);
      return Promise.resolve();
    }
    const l = Number(layer.value);
    const hd = head.value === 'mean' ? 'mean' : Number(head.value);
    const cells = mapsHeatmapPieces(m, l, hd);
    const heatDrawn = showFigureInPieces(
      figHeat,
      {
        id: ids.heatmap,
        view,
        title: `${m.name}, layer ${l + 1}, ${hd === 'mean' ? 'mean of heads' : `head ${hd + 1}`}`,
      },
      cells,
      () => {
        keyboardCells(figHeat, focused);
        if (refocus) figHeat.querySelector<SVGElement>('rect.cell[tabindex="0"]')?.focus();
      },
      onCanvas(cells) ? canvasCells(cells) : undefined,
    );
    const shown = allHeads.checked || hd === 'mean' ? undefined : [hd];
    const links = mapsHeadViewPieces(m, l, shown, highlight);
    const headDrawn = showFigureInPieces(
      figHead,
      { id: ids.headview, view, title: `head view: ${m.name}, layer ${l + 1}` },
      links,
      undefined,
      links.lines > HEADVIEW_SVG_LINES ? canvasLinks(links) : undefined,
    );
    const drawn = Promise.all([heatDrawn, headDrawn]);
    const selected = hd === 'mean' ? null : { layer: l, head: hd };
    // The Export list's model view: the vector picture, with the selection now on screen, built when downloaded.
    let svg: string | undefined;
    const entry = {
      id: ids.modelview,
      view,
      title: `model view: ${m.name}`,
      get svg() {
        svg ??= mapsModelViewSvg(m, selected);
        return svg;
      },
    };
    if (modelViewOf === m && !modelRowsPending) {
      updateFigure(figModel, entry);
      for (const g of figModel.querySelectorAll('.thumb')) {
        const on =
          selected !== null && g.getAttribute('data-layer') === String(l) && g.getAttribute('data-head') === String(hd);
        g.classList.toggle('selected', on);
        const frame = on ? THUMB_FRAME.selected : THUMB_FRAME.plain;
        g.querySelector('.frame')?.setAttribute('stroke', frame.stroke);
        g.querySelector('.frame')?.setAttribute('stroke-width', String(frame.width));
      }
      return drawn;
    }
    stopThumbs();
    // The model view's frame and labels, then its thumbnails a few layer rows a piece (paced.ts): 270 of them (a
    // 30 × 9 model) parsed, styled and laid out in one task were a frame of well over 100 ms.
    const { shell, rows } = modelViewRows(mapsModelViewSvg(m, selected, undefined, false));
    const pieces = rowPieces(rows, mapsSize(m).heads);
    showFigure(figModel, entry, shell);
    modelViewOf = m;
    const svgEl = figModel.querySelector('.fig-svg svg');
    const seen = new IntersectionObserver(
      (entries) => {
        for (const e of entries) {
          if (!e.isIntersecting) continue;
          seen.unobserve(e.target);
          thumbJobs.push(paced(1, () => paintThumb(m, e.target as SVGGElement), undefined, true));
        }
      },
      { rootMargin: '200px 0px' },
    );
    thumbsSeen = seen;
    const addRows = (k: number) => {
      if (!svgEl) return;
      const before = svgEl.lastElementChild;
      svgEl.insertAdjacentHTML('beforeend', pieces[k]);
      for (let g = before ? before.nextElementSibling : svgEl.firstElementChild; g; g = g.nextElementSibling) {
        if (!g.classList.contains('thumb')) continue;
        g.setAttribute('tabindex', '0');
        g.setAttribute('role', 'button');
        g.setAttribute(
          'aria-label',
          `layer ${Number(g.getAttribute('data-layer')) + 1}, head ${Number(g.getAttribute('data-head')) + 1}`,
        );
        seen.observe(g);
      }
    };
    modelRowsPending = true;
    // A small model's view whole at once, as drawn before; a big one's from the next frame on.
    const rowsJob = paced(
      pieces.length,
      addRows,
      () => {
        modelRowsPending = false;
      },
      pieces.length > 1,
    );
    thumbJobs.push(rowsJob);
    return Promise.all([drawn, rowsJob.done]);
  };

  for (const control of [layer, head, allHeads]) control.addEventListener('change', () => void draw());
  const follow = (cell: Element) => {
    const r = Number(cell.getAttribute('data-row'));
    highlight = highlight === r ? null : r;
    void draw(cell === document.activeElement);
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
    void draw();
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
    async show(maps) {
      current = maps;
      highlight = null;
      focused = null;
      controls.hidden = maps === null;
      hint.hidden = maps === null;
      if (maps) fillSelectors(maps);
      await draw();
    },
  };
}
