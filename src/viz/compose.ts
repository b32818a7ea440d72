/**
 * Putting several SVG pictures side by side or in a grid, as one SVG (nested <svg> elements), and
 * wrapping an SVG in a standalone HTML page.
 */
import { esc, maxTextWidth } from './svg.ts';

function size(svg: string): { w: number; h: number } {
  const m = /^<svg\b[^>]*\bwidth="([\d.]+)"[^>]*\bheight="([\d.]+)"/.exec(svg);
  if (!m) throw new Error('gridSvg: each part must be an <svg> with width and height');
  return { w: Number(m[1]), h: Number(m[2]) };
}

/** Parts laid out row by row, `columns` per row; each cell of the grid is as large as its largest part. */
export function gridSvg(
  parts: readonly string[],
  options: { columns: number; gap?: number; title?: string; background?: string | null },
): string {
  if (parts.length === 0) throw new Error('gridSvg: no parts');
  const cols = Math.max(1, Math.min(options.columns, parts.length));
  const gap = options.gap ?? 12;
  const sizes = parts.map(size);
  const cw = Math.max(...sizes.map((s) => s.w));
  const ch = Math.max(...sizes.map((s) => s.h));
  const rows = Math.ceil(parts.length / cols);
  const top = options.title ? 30 : 0;
  const width = Math.ceil(
    Math.max(cols * cw + (cols - 1) * gap, options.title ? 8 + maxTextWidth([options.title], 16) * 1.12 : 0),
  );
  const height = Math.ceil(top + rows * ch + (rows - 1) * gap);
  const out = [
    `<svg xmlns="http://www.w3.org/2000/svg" class="qkv-grid" ` +
      `width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" ` +
      `font-family="system-ui, sans-serif">`,
  ];
  if (options.background !== null)
    out.push(
      `<rect class="background" width="${width}" height="${height}" fill="${options.background ?? '#ffffff'}"/>`,
    );
  if (options.title)
    out.push(`<text class="title" x="4" y="20" font-size="16" font-weight="600">${esc(options.title)}</text>`);
  parts.forEach((p, i) => {
    const x = (i % cols) * (cw + gap);
    const y = top + Math.floor(i / cols) * (ch + gap);
    out.push(p.replace(/^<svg\b/, `<svg x="${x}" y="${y}"`));
  });
  out.push('</svg>');
  return out.join('');
}

/** A self-contained HTML page showing `body` (SVG or HTML) under a heading. */
export function standaloneHtml(title: string, body: string, css = ''): string {
  return (
    `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>${esc(title)}</title>` +
    `<style>body{font-family:system-ui,sans-serif;margin:24px;color:#1a1a1a}h1{font-size:20px}${css}</style></head>` +
    `<body><h1>${esc(title)}</h1>\n${body}\n<p style="color:#777;font-size:12px">Made with qkv.</p></body></html>\n`
  );
}
