/**
 * A long heatmap's cells on a canvas. A 120-token map is 14,641 <rect>s, each with its <title>: the browser
 * restyled and repainted 30,000 elements as they came in and whenever one changed, more than a frame's time.
 * Past HEATMAP_SVG_CELLS cells the page paints the cells (their fills from heatmapPieces: the colours the SVG's
 * rects have) on a canvas over the cells' area, a piece of rows at a time; the labels, legend and title stay
 * SVG. What the rects gave stays: the hovered cell's tokens and value as the canvas's tooltip, a click follows
 * the hovered cell's row (the canvas carries its data-row), and the keyboard moves one rect.cell, the cursor,
 * read out as a cell's title is (figures.ts keyboardCells, through movableCells). The Export list's SVG is
 * still the vector picture with every cell.
 */
import type { HeatmapPieces } from '../../../src/viz/heatmap.ts';
import { movableCells } from '../figures.ts';
import { canvasIn, rasterise } from './canvas-layer.ts';

/** Cells above which a heatmap's cells are painted on a canvas (unless values are printed in them). */
export const HEATMAP_SVG_CELLS = 4000;

const SVG_NS = 'http://www.w3.org/2000/svg';

/** Whether the page paints this heatmap's cells on a canvas. */
export function onCanvas(pieces: HeatmapPieces): boolean {
  return pieces.grid.rows * pieces.grid.cols > HEATMAP_SVG_CELLS && !pieces.grid.showValues;
}

/** The painter of showFigureInPieces for `pieces`: a canvas over the cells' area, piece k's rows on it. */
export function canvasCells(pieces: HeatmapPieces): (cells: Element) => (k: number) => void {
  return (cells) => {
    const g = pieces.grid;
    const cw = g.cellWidth;
    const ch = g.cellHeight;
    // A pixel per cell, scaled up sharp: a 150-token map is 22,500 pixels to hold and send, not 4 million.
    const { canvas, ctx } = canvasIn(cells, g.left, g.top, g.cols * cw, g.rows * ch, 'cells-canvas', {
      width: g.cols,
      height: g.rows,
    });
    // The cell under the pointer: its tokens and value as the tooltip, its row and column on the canvas.
    const hover = (e: PointerEvent) => {
      const i = Math.min(g.rows - 1, Math.max(0, Math.floor(e.offsetY / ch)));
      const j = Math.min(g.cols - 1, Math.max(0, Math.floor(e.offsetX / cw)));
      if (canvas.dataset.row === String(i) && canvas.dataset.col === String(j)) return;
      canvas.dataset.row = String(i);
      canvas.dataset.col = String(j);
      canvas.title = g.title(i, j);
    };
    canvas.addEventListener('pointermove', hover);
    canvas.addEventListener('pointerdown', hover);
    // The keyboard's cell: one rect.cell over the canvas, moved to the cell asked for.
    const cursor = document.createElementNS(SVG_NS, 'rect');
    cursor.setAttribute('class', 'cell cursor');
    cursor.setAttribute('width', String(cw));
    cursor.setAttribute('height', String(ch));
    cursor.setAttribute('fill', 'none');
    cursor.setAttribute('pointer-events', 'none');
    const title = document.createElementNS(SVG_NS, 'title');
    cursor.append(title);
    cells.append(cursor);
    const svg = cells.closest('svg');
    if (svg)
      movableCells.set(svg, (i, j) => {
        cursor.setAttribute('data-row', String(i));
        cursor.setAttribute('data-col', String(j));
        cursor.setAttribute('x', String(g.left + j * cw));
        cursor.setAttribute('y', String(g.top + i * ch));
        title.textContent = g.title(i, j);
        return cursor;
      });
    let painted = 0;
    return (k) => {
      for (let i = k * g.rowsPerPiece; i < Math.min(g.rows, (k + 1) * g.rowsPerPiece); i++) {
        for (let j = 0; j < g.cols; j++) {
          ctx.fillStyle = g.fill(i, j);
          ctx.fillRect(j, i, 1, 1);
        }
        painted++;
      }
      rasterise(ctx);
      // How many rows are on the canvas, and whether all are (for a reader of the page, and its tests).
      canvas.dataset.rows = String(painted);
      if (k === pieces.count - 1) canvas.dataset.drawn = 'true';
    };
  };
}
