/**
 * A long head view's lines on a canvas. 100 tokens make 4 heads × 5,000 lines: as SVG <line>s (each with its
 * <title>) the browser repainted 60,000 elements whenever any changed, hundreds of ms a frame. Past
 * HEADVIEW_SVG_LINES query-key pairs the page paints the lines (their numbers from headViewPieces, so the same
 * lines, colours, opacities and widths) on a canvas in the picture's links group, a piece a time; the tokens stay
 * SVG text. The Export list's SVG is still the vector picture with every line.
 */
import type { HeadViewPieces } from '../../../src/viz/headview.ts';
import { canvasIn, rasterise } from './canvas-layer.ts';

/** Query-key pairs (over the heads shown) above which the head view's lines are painted on a canvas. */
export const HEADVIEW_SVG_LINES = 4000;

/** The painter of showFigureInPieces for `pieces`: a canvas over the picture in `links`, piece k's lines on it. */
export function canvasLinks(pieces: HeadViewPieces): (links: Element) => (k: number) => void {
  return (links) => {
    const box = pieces.linksBox;
    const { canvas, ctx } = canvasIn(links, box.x, box.y, box.width, box.height, 'links-canvas');
    canvas.parentElement!.setAttribute('pointer-events', 'none');
    ctx.lineCap = 'round';
    let painted = 0;
    return (k) => {
      for (const l of pieces.links(k)) {
        ctx.beginPath();
        ctx.moveTo(l.x1, l.y1);
        ctx.lineTo(l.x2, l.y2);
        ctx.strokeStyle = l.stroke;
        ctx.globalAlpha = l.opacity;
        ctx.lineWidth = l.width;
        ctx.stroke();
        painted++;
      }
      rasterise(ctx);
      // How many lines are on the canvas, and whether all are (for a reader of the page, and its tests).
      canvas.dataset.lines = String(painted);
      if (k === pieces.count - 1) canvas.dataset.drawn = 'true';
    };
  };
}
