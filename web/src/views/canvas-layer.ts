/**
 * A canvas inside an SVG picture, for the part of a long picture that is too many elements to be SVG (a
 * 120-token heatmap's 14,641 cells, a head view's 20,000 lines): a <foreignObject> over that part holding an
 * HTML canvas at the picture's scale, so the labels, legend and title stay SVG around it.
 */

const SVG_NS = 'http://www.w3.org/2000/svg';
/** Canvas sides past which its resolution stays 1 (Chromium's canvases stop at 32,767 px a side). */
const TALL = 16000;

/**
 * A canvas over `width` × `height` px of the picture at (x, y), appended to `into`; its context draws in picture
 * px from (x, y). `pixels`: the canvas's own size instead (a heatmap's, a pixel per cell), shown scaled up
 * without smoothing, each pixel a sharp block.
 */
export function canvasIn(
  into: Element,
  x: number,
  y: number,
  width: number,
  height: number,
  className: string,
  pixels?: { width: number; height: number },
): { canvas: HTMLCanvasElement; ctx: CanvasRenderingContext2D } {
  const scale = Math.max(width, height) * 2 > TALL ? 1 : Math.min(2, Math.max(1, globalThis.devicePixelRatio || 1));
  const box = document.createElementNS(SVG_NS, 'foreignObject');
  for (const [a, v] of [
    ['x', x],
    ['y', y],
    ['width', width],
    ['height', height],
  ] as const)
    box.setAttribute(a, String(v));
  const canvas = document.createElement('canvas');
  canvas.className = className;
  canvas.width = pixels?.width ?? Math.ceil(width * scale);
  canvas.height = pixels?.height ?? Math.ceil(height * scale);
  canvas.style.width = `${width}px`;
  canvas.style.height = `${height}px`;
  canvas.style.display = 'block';
  if (pixels) canvas.style.imageRendering = 'pixelated';
  box.append(canvas);
  into.append(box);
  // On the CPU: rasterise() reads a pixel back after each piece, which a GPU canvas would pay in a stall.
  const ctx = canvas.getContext('2d', { willReadFrequently: true })!;
  if (!pixels) ctx.setTransform(scale, 0, 0, scale, -x * scale, -y * scale);
  return { canvas, ctx };
}

/**
 * Rasterises what was drawn on `ctx` now. A 2D canvas records its drawing and rasterises it when the task ends:
 * a piece's lines cost little to record and many times that to rasterise, out of the sight of paced.ts's
 * budget (a head view's 20,000 lines, recorded in one frame, were rasterised in one 400 ms task). Reading a
 * pixel back makes the piece pay its own raster.
 */
export function rasterise(ctx: CanvasRenderingContext2D): void {
  ctx.getImageData(0, 0, 1, 1);
}
