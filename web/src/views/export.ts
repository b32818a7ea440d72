/**
 * Export view: every picture on the page as SVG or PNG (or as a small HTML page), and any view as
 * a standalone HTML file (its current state, numbers and pictures, no script needed to open it).
 */
import { byId, h } from '../dom.ts';
import {
  download,
  downloadFigureHtml,
  downloadPng,
  downloadSvg,
  figures,
  onFiguresChange,
  viewAsHtml,
} from '../figures.ts';

const MODEL_VIEWS = { translate: 'Translate', generate: 'Generate' } as const;
const VIEWS: readonly (readonly [string, string])[] = [
  ['positional', 'Positional encoding'],
  ['steps', 'Step by step'],
  ['train', 'Train'],
];

/** modelViews: the model views the page shows (Translate where a translation model is served, Generate for GPTs). */
export function initExport(root: HTMLElement, modelViews: readonly (keyof typeof MODEL_VIEWS)[] = ['translate']): void {
  const list = h('table', { class: 'export-list', id: 'export-list' });
  const views = h(
    'div',
    { class: 'row' },
    ...[...modelViews.map((v) => [v, MODEL_VIEWS[v]] as const), ...VIEWS].map(([id, title]) => {
      const b = h('button', { type: 'button', 'data-export-view': id, text: `${title} view as HTML` });
      b.addEventListener('click', () =>
        download(`qkv-${id}.html`, new Blob([viewAsHtml(byId(`view-${id}`), title)], { type: 'text/html' })),
      );
      return b;
    }),
  );
  root.append(
    h(
      'div',
      { class: 'panel' },
      h(
        'p',
        {},
        'Save any picture as SVG (vector, editable) or PNG (2× resolution), or ' +
          'a whole view as one HTML file that opens anywhere without a server. ',
        'Without a browser (translation models): ',
        h('code', { text: 'qkv attention --model DIR "a sentence" --out attn.svg' }),
        '.',
      ),
      h('h2', { text: 'Views' }),
      views,
      h('h2', { text: 'Pictures' }),
      list,
    ),
  );
  const render = () => {
    const fs = figures();
    list.replaceChildren(
      h('tr', {}, h('th', { text: 'view' }), h('th', { text: 'picture' }), h('th', { text: 'download' })),
    );
    if (fs.length === 0) list.append(h('tr', {}, h('td', { colspan: 3, class: 'muted', text: 'Nothing drawn yet.' })));
    for (const f of fs) {
      const svg = h('button', { type: 'button', class: 'small', text: 'SVG' });
      const png = h('button', { type: 'button', class: 'small', text: 'PNG' });
      const html = h('button', { type: 'button', class: 'small', text: 'HTML' });
      svg.addEventListener('click', () => downloadSvg(f));
      png.addEventListener('click', () => void downloadPng(f));
      html.addEventListener('click', () => downloadFigureHtml(f));
      list.append(
        h(
          'tr',
          { 'data-figure': f.id },
          h('td', { text: f.view }),
          h('td', { text: f.title }),
          h('td', {}, svg, png, html),
        ),
      );
    }
  };
  onFiguresChange(render);
  render();
}
