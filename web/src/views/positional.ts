/**
 * Positional encoding view (seed 004): the sinusoid table as a heatmap (positions × dimensions),
 * and its curves, with dModel and the length adjustable.
 */
import { positionalCurvesSvg, positionalHeatmapSvg } from '../../../src/viz/positional.ts';
import { field, h } from '../dom.ts';
import { figureBox, hideFigure, showFigure } from '../figures.ts';

/**
 * The whole numbers of a list field ("0, 10, 20"), in 0..`below` - 1; an entry that is not a whole
 * number >= 0 is an error naming the field; none in range is an error too (entries past the range
 * are left out: the range follows dModel and the length).
 */
function indices(field: string, s: string, below: number, what: string): number[] {
  const parts = s.split(/[\s,]+/).filter(Boolean);
  const bad = parts.find((p) => !/^\d+$/.test(p));
  if (bad !== undefined) throw new Error(`${field}: '${bad}' is not a whole number >= 0`);
  const ns = parts.map(Number).filter((n) => n < below);
  if (ns.length === 0)
    throw new Error(
      `${field}: ${parts.length === 0 ? 'no' : `none of ${parts.join(', ')} is a`} ${what} in 0..${below - 1}`,
    );
  return ns;
}

export function initPositional(root: HTMLElement): void {
  const dModel = h('input', {
    id: 'pe-dmodel',
    'data-testid': 'pe-dmodel',
    type: 'number',
    min: 2,
    max: 1024,
    step: 2,
    value: 128,
  });
  const length = h('input', {
    id: 'pe-length',
    'data-testid': 'pe-length',
    type: 'number',
    min: 1,
    max: 512,
    value: 50,
  });
  const positions = h('input', { id: 'pe-positions', type: 'text', value: '0, 10, 20, 30, 40', size: 18 });
  const dims = h('input', { id: 'pe-dims', type: 'number', min: 1, max: 1024, value: 50 });
  const dimensions = h('input', { id: 'pe-dimensions', type: 'text', value: '4, 5, 6, 7', size: 12 });
  const err = h('p', { class: 'error', role: 'alert', hidden: true });
  // One message per field that is wrong; the figure it feeds is taken away (stale curves would mislead).
  const figHeat = figureBox('pe-heatmap');
  const figPos = figureBox('pe-positions');
  const figDims = figureBox('pe-dimensions');
  root.append(
    h(
      'div',
      { class: 'panel' },
      h(
        'p',
        {},
        'Each position gets a vector of sines and cosines of geometrically spaced frequencies (§3.5): ',
        h('code', { text: 'PE(pos, 2i) = sin(pos / 10000^(2i/dModel)), PE(pos, 2i+1) = cos(pos / 10000^(2i/dModel))' }),
        '. Low dimensions change fast with the position, high ones slowly; ' +
          'relative offsets are linear maps of these vectors.',
      ),
      h(
        'div',
        { class: 'row' },
        field('dModel', dModel),
        field('Length (positions)', length),
        field('Curves of positions', positions),
        field('over the first … dimensions', dims),
        field('Curves of dimensions', dimensions),
      ),
      err,
    ),
    figHeat,
    h('div', { class: 'figs' }, figPos, figDims),
  );
  const draw = () => {
    const d = Number(dModel.value);
    const n = Number(length.value);
    const messages: string[] = [];
    /** Show figure `id` from `svg()`, or take it away and keep the message when that throws. */
    const attempt = (el: HTMLElement, id: string, title: string, svg: () => string) => {
      try {
        showFigure(el, { id, view: 'Positional encoding', title, svg: svg() });
      } catch (e) {
        hideFigure(el, id);
        messages.push((e as Error).message);
      }
    };
    const shape = () => {
      // Sines and cosines come in pairs (§3.5): PE(pos, 2i) and PE(pos, 2i+1) share a frequency.
      if (!/^\d+$/.test(dModel.value.trim()) || d < 2 || d > 1024 || d % 2 !== 0)
        throw new Error(`dModel must be an even whole number from 2 to 1024, got '${dModel.value}'`);
      if (!/^\d+$/.test(length.value.trim()) || n < 1 || n > 512)
        throw new Error(`the length must be a whole number from 1 to 512, got '${length.value}'`);
    };
    try {
      shape();
    } catch (e) {
      for (const [el, id] of [
        [figHeat, 'pe-heatmap'],
        [figPos, 'pe-positions'],
        [figDims, 'pe-dimensions'],
      ] as const)
        hideFigure(el, id);
      messages.push((e as Error).message);
    }
    if (messages.length === 0) {
      attempt(figHeat, 'pe-heatmap', `positional encoding, length ${n}, dModel ${d}`, () =>
        positionalHeatmapSvg({ length: n, dModel: d }),
      );
      attempt(figPos, 'pe-positions', 'positional encoding of several positions', () => {
        const first = Number(dims.value);
        if (!Number.isInteger(first) || first < 1)
          throw new Error(`over the first … dimensions: a whole number >= 1, got '${dims.value}'`);
        return positionalCurvesSvg({
          length: n,
          dModel: d,
          mode: 'positions',
          positions: indices('Curves of positions', positions.value, n, 'position'),
          dims: Math.min(first, d),
        });
      });
      attempt(figDims, 'pe-dimensions', 'positional encoding of several dimensions', () =>
        positionalCurvesSvg({
          length: n,
          dModel: d,
          mode: 'dimensions',
          dimensions: indices('Curves of dimensions', dimensions.value, d, 'dimension'),
        }),
      );
    }
    err.textContent = messages.join(' ');
    err.hidden = messages.length === 0;
  };
  for (const el of [dModel, length, positions, dims, dimensions]) el.addEventListener('input', draw);
  draw();
}
