/**
 * Every picture on the page is a "figure": an SVG string shown in a <figure> with SVG and PNG
 * download buttons, and listed in the Export view. Views re-render figures in place by id.
 */
import { standaloneHtml } from '../../src/viz/compose.ts';
import { joinPieces, type SvgPieces } from '../../src/viz/svg.ts';
import { h } from './dom.ts';
import { type Paced, paced } from './paced.ts';

export interface FigureEntry {
  id: string;
  view: string;
  title: string;
  svg: string;
}

const registry = new Map<string, FigureEntry>();
const listeners = new Set<() => void>();

export function figures(): FigureEntry[] {
  return [...registry.values()];
}

export function onFiguresChange(f: () => void): void {
  listeners.add(f);
}

function slug(s: string): string {
  return (
    s
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-|-$/g, '')
      .slice(0, 60) || 'figure'
  );
}

export function download(name: string, data: Blob): void {
  const url = URL.createObjectURL(data);
  const a = h('a', { href: url, download: name });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 5000);
}

export function downloadSvg(f: FigureEntry): void {
  download(
    `${slug(f.title)}.svg`,
    new Blob([`<?xml version="1.0" encoding="UTF-8"?>\n${f.svg}\n`], { type: 'image/svg+xml' }),
  );
}

/** Rasterise an SVG string at `scale` × its size. */
export async function svgToPng(svg: string, scale = 2): Promise<Blob> {
  const m = /^<svg\b[^>]*\bwidth="([\d.]+)"[^>]*\bheight="([\d.]+)"/.exec(svg);
  const w = m ? Number(m[1]) : 600;
  const hh = m ? Number(m[2]) : 400;
  const url = URL.createObjectURL(new Blob([svg], { type: 'image/svg+xml' }));
  try {
    const img = new Image();
    img.decoding = 'sync';
    await new Promise<void>((resolve, reject) => {
      img.onload = () => resolve();
      img.onerror = () => reject(new Error('could not draw the SVG as an image'));
      img.src = url;
    });
    const canvas = document.createElement('canvas');
    canvas.width = Math.ceil(w * scale);
    canvas.height = Math.ceil(hh * scale);
    const ctx = canvas.getContext('2d')!;
    ctx.fillStyle = '#fff';
    ctx.fillRect(0, 0, canvas.width, canvas.height);
    ctx.drawImage(img, 0, 0, canvas.width, canvas.height);
    return await new Promise<Blob>((resolve, reject) =>
      canvas.toBlob((b) => (b ? resolve(b) : reject(new Error('PNG encoding failed'))), 'image/png'),
    );
  } finally {
    URL.revokeObjectURL(url);
  }
}

export async function downloadPng(f: FigureEntry): Promise<void> {
  download(`${slug(f.title)}.png`, await svgToPng(f.svg));
}

export function downloadFigureHtml(f: FigureEntry): void {
  download(`${slug(f.title)}.html`, new Blob([standaloneHtml(f.title, f.svg)], { type: 'text/html' }));
}

/** The drawing in progress in each figure element (showFigureInPieces), cancelled when the figure changes. */
const drawing = new WeakMap<HTMLElement, Paced>();

function stopDrawing(el: HTMLElement): void {
  drawing.get(el)?.cancel();
  drawing.delete(el);
}

/**
 * Show `svg` in the figure element `el` (created once with `figureBox`), registered as `id`; `shown`: what the
 * page shows when it is not the picture itself (its frame, filled later), `entry.svg` then a getter, computed
 * when the picture is downloaded.
 */
export function showFigure(el: HTMLElement, entry: FigureEntry, shown?: string): void {
  stopDrawing(el);
  registry.set(entry.id, entry);
  const box = el.querySelector<HTMLElement>('.fig-svg')!;
  box.innerHTML = shown ?? entry.svg;
  el.hidden = false;
  el.querySelector<HTMLElement>('.fig-title')!.textContent = entry.title;
  for (const f of listeners) f();
}

/**
 * Show a picture drawn in pieces (paced.ts) in the figure element `el`: its frame (all but the pieces) at once,
 * then its pieces, the first at once, the rest a few per frame. The Export list's SVG is the whole picture, built
 * when it is downloaded. `onDrawn` runs when the last piece is in; the promise says whether it was drawn whole
 * (false: the figure changed first). `painter`, given the container, paints piece k its own way (default: the
 * piece's SVG elements appended to the container).
 */
export function showFigureInPieces(
  el: HTMLElement,
  about: Omit<FigureEntry, 'svg'>,
  pieces: SvgPieces,
  onDrawn?: () => void,
  painter?: (container: Element) => (k: number) => void,
): Promise<boolean> {
  let svg: string | undefined;
  showFigure(
    el,
    {
      ...about,
      get svg() {
        svg ??= joinPieces(pieces);
        return svg;
      },
    },
    pieces.before + pieces.after,
  );
  const into = el.querySelector(`.fig-svg > svg > ${pieces.container}`);
  if (!into) throw new Error(`showFigureInPieces: no ${pieces.container} in the picture of ${about.id}`);
  // Parsed in the container's context: SVG elements.
  const paint = painter?.(into) ?? ((k: number) => into.insertAdjacentHTML('beforeend', pieces.piece(k)));
  const job = paced(pieces.count, paint, onDrawn);
  drawing.set(el, job);
  return job.done;
}

/**
 * Register a new state of the figure shown in `el` whose picture on screen is already right (the
 * page changed it in place): its title changes, the SVG is not parsed again. `entry.svg` may be a
 * getter, computed when the picture is downloaded.
 */
export function updateFigure(el: HTMLElement, entry: FigureEntry): void {
  registry.set(entry.id, entry);
  el.querySelector<HTMLElement>('.fig-title')!.textContent = entry.title;
  for (const f of listeners) f();
}

export function hideFigure(el: HTMLElement, id: string): void {
  stopDrawing(el);
  registry.delete(id);
  el.hidden = true;
  el.querySelector<HTMLElement>('.fig-svg')!.innerHTML = '';
  for (const f of listeners) f();
}

/**
 * A heatmap whose cells are painted on a canvas (views/heatmap-canvas.ts) has one rect.cell, the cursor: this
 * moves it to cell (row, col) of the picture (its <svg>) and returns it.
 */
export const movableCells = new WeakMap<Element, (row: number, col: number) => SVGElement>();

/** Make `cell` the heatmap's one tab stop, read out as its title says (its tokens and value). */
function tabStop(cell: SVGElement): void {
  cell.setAttribute('tabindex', '0');
  cell.setAttribute('role', 'img');
  cell.setAttribute('aria-label', cell.querySelector('title')?.textContent ?? '');
}

/**
 * The cells of the heatmap shown in `el` made reachable by keyboard: one tab stop (the cell at
 * `at`, else the first), the arrow keys (Home, End: the row's ends) move it between cells, and the
 * cell that has it is read out as its title says (its tokens and value). Only that cell carries the
 * attributes: a long text's map has tens of thousands of cells. Call after each showFigure.
 */
export function keyboardCells(el: HTMLElement, at: readonly [number, number] | null = null): void {
  const svg = el.querySelector('.fig-svg > svg');
  const move = svg ? movableCells.get(svg) : undefined;
  const stop = move
    ? move(at?.[0] ?? 0, at?.[1] ?? 0)
    : (at && el.querySelector<SVGElement>(`rect.cell[data-row="${at[0]}"][data-col="${at[1]}"]`)) ||
      el.querySelector<SVGElement>('rect.cell');
  if (stop) tabStop(stop);
  if (el.dataset.keyboard) return;
  el.dataset.keyboard = 'true';
  el.addEventListener('keydown', (e) => {
    const cell = (e.target as Element).closest('rect.cell');
    const svg = cell?.closest('svg');
    if (!cell || !svg) return;
    const rows = Number(svg.getAttribute('data-rows'));
    const cols = Number(svg.getAttribute('data-cols'));
    let r = Number(cell.getAttribute('data-row'));
    let c = Number(cell.getAttribute('data-col'));
    if (e.key === 'ArrowRight') c = Math.min(cols - 1, c + 1);
    else if (e.key === 'ArrowLeft') c = Math.max(0, c - 1);
    else if (e.key === 'ArrowDown') r = Math.min(rows - 1, r + 1);
    else if (e.key === 'ArrowUp') r = Math.max(0, r - 1);
    else if (e.key === 'Home') c = 0;
    else if (e.key === 'End') c = cols - 1;
    else return;
    e.preventDefault();
    const move = movableCells.get(svg);
    if (move) {
      // Cells on a canvas: the one rect.cell moves, and is read out again.
      tabStop(move(r, c));
      return;
    }
    const next = svg.querySelector<SVGElement>(`rect.cell[data-row="${r}"][data-col="${c}"]`);
    if (!next || next === cell) return;
    for (const a of ['tabindex', 'role', 'aria-label']) cell.removeAttribute(a);
    tabStop(next);
    next.focus();
  });
}

/** An empty figure with download buttons; fill it with showFigure. */
export function figureBox(id: string): HTMLElement {
  const svgBtn = h('button', { type: 'button', class: 'small', text: 'SVG', title: 'download as SVG' });
  const pngBtn = h('button', { type: 'button', class: 'small', text: 'PNG', title: 'download as PNG' });
  const fig = h(
    'figure',
    { class: 'fig', id: `fig-${id}`, 'data-figure': id, hidden: true },
    h('div', { class: 'fig-svg', 'data-testid': `fig-${id}` }),
    h('figcaption', {}, h('span', { class: 'fig-title' }), ' ', svgBtn, pngBtn),
  );
  svgBtn.addEventListener('click', () => {
    const f = registry.get(id);
    if (f) downloadSvg(f);
  });
  pngBtn.addEventListener('click', () => {
    const f = registry.get(id);
    if (f) void downloadPng(f);
  });
  return fig;
}

/** The page's CSS text (for standalone HTML exports). */
export function pageCss(): string {
  let css = '';
  for (const sheet of Array.from(document.styleSheets)) {
    try {
      for (const r of Array.from(sheet.cssRules)) css += `${r.cssText}\n`;
    } catch {
      /* cross-origin sheet: skipped */
    }
  }
  return css;
}

/**
 * A view as a standalone HTML file: its current content, inputs replaced by their values, buttons
 * and selectors removed, with the page's CSS inlined. Opens anywhere, no server, no script.
 */
export function viewAsHtml(section: HTMLElement, title: string): string {
  const clone = section.cloneNode(true) as HTMLElement;
  clone.hidden = false;
  // Each picture whole, as the Export list gives it: on the page a long one may be half drawn, or drawn as
  // images of its cells as they came on screen (the model view's thumbnails).
  for (const fig of clone.querySelectorAll<HTMLElement>('figure[data-figure]')) {
    const entry = registry.get(fig.dataset.figure ?? '');
    const box = fig.querySelector('.fig-svg');
    if (entry && box) box.innerHTML = entry.svg;
  }
  const live = section.querySelectorAll<HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement>(
    'input, select, textarea',
  );
  const copies = clone.querySelectorAll<HTMLElement>('input, select, textarea');
  copies.forEach((el, i) => {
    const src = live[i];
    let value = src.value;
    if (src instanceof HTMLSelectElement) value = src.selectedOptions[0]?.textContent ?? value;
    if (src instanceof HTMLInputElement && src.type === 'checkbox') value = src.checked ? '✓' : '✗';
    el.replaceWith(h('span', { class: 'frozen', text: value }));
  });
  clone.querySelectorAll('button, .no-export').forEach((b) => b.remove());
  clone.querySelectorAll('[hidden]').forEach((b) => b.remove());
  return standaloneHtml(`qkv · ${title}`, clone.innerHTML, pageCss());
}
