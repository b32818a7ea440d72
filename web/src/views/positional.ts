/**
 * Positional encoding view (seed 004): the sinusoid table as a heatmap (positions × dimensions),
 * and its curves, with dModel and the length adjustable.
 */
import { positionalCurvesSvg, positionalHeatmapSvg } from '../../../src/viz/positional.ts';
import { field, h } from '../dom.ts';
import { figureBox, showFigure } from '../figures.ts';

function ints(s: string): number[] {
  return s
    .split(/[\s,]+/)
    .filter(Boolean)
    .map(Number)
    .filter((n) => Number.isInteger(n));
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
  const err = h('p', { class: 'error', hidden: true });
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
    err.hidden = true;
    try {
      if (!Number.isInteger(d) || d < 1 || d > 1024) throw new Error('dModel must be an integer from 1 to 1024');
      if (!Number.isInteger(n) || n < 1 || n > 512) throw new Error('the length must be an integer from 1 to 512');
      showFigure(figHeat, {
        id: 'pe-heatmap',
        view: 'Positional encoding',
        title: `positional encoding, length ${n}, dModel ${d}`,
        svg: positionalHeatmapSvg({ length: n, dModel: d }),
      });
      showFigure(figPos, {
        id: 'pe-positions',
        view: 'Positional encoding',
        title: 'positional encoding of several positions',
        svg: positionalCurvesSvg({
          length: n,
          dModel: d,
          mode: 'positions',
          positions: ints(positions.value),
          dims: Number(dims.value) || 50,
        }),
      });
      showFigure(figDims, {
        id: 'pe-dimensions',
        view: 'Positional encoding',
        title: 'positional encoding of several dimensions',
        svg: positionalCurvesSvg({ length: n, dModel: d, mode: 'dimensions', dimensions: ints(dimensions.value) }),
      });
    } catch (e) {
      err.textContent = (e as Error).message;
      err.hidden = false;
    }
  };
  for (const el of [dModel, length, positions, dims, dimensions]) el.addEventListener('input', draw);
  draw();
}
