/** The explorer's shell: tabs (with the URL hash), the status line, and the four views. */
import './style.css';
import { chooseBackend, type BackendChoice } from './backend.ts';
import { byId } from './dom.ts';
import { initExport } from './views/export.ts';
import { initPositional } from './views/positional.ts';
import { initSteps } from './views/steps.ts';
import { initTranslate } from './views/translate.ts';

const VIEWS = ['translate', 'positional', 'steps', 'export'] as const;
type View = (typeof VIEWS)[number];

const status: { backend: BackendChoice | null; model: string } = { backend: null, model: 'loading the model…' };

export function setModelStatus(text: string): void {
  status.model = text;
  renderStatus();
}

function renderStatus(): void {
  const b = status.backend;
  const el = byId('status');
  el.textContent = `${status.model} · backend: ${b ? b.name : '…'}`;
  el.title = b?.note ? `wasm backend not used: ${b.note}` : '';
}

function show(view: View): void {
  for (const v of VIEWS) {
    byId(`view-${v}`).hidden = v !== view;
    document.querySelector(`#tabs [data-view="${v}"]`)?.setAttribute('aria-selected', String(v === view));
  }
}

function route(): void {
  const v = location.hash.slice(1) as View;
  show(VIEWS.includes(v) ? v : 'translate');
}

async function start(): Promise<void> {
  for (const b of document.querySelectorAll<HTMLButtonElement>('#tabs [data-view]')) {
    b.addEventListener('click', () => {
      location.hash = b.dataset.view!;
    });
  }
  window.addEventListener('hashchange', route);
  route();
  renderStatus();
  const pref = (new URLSearchParams(location.search).get('backend') ?? 'auto') as 'auto' | 'js' | 'wasm';
  status.backend = await chooseBackend(pref);
  renderStatus();
  initPositional(byId('view-positional'));
  initSteps(byId('view-steps'));
  initExport(byId('view-export'));
  await initTranslate(byId('view-translate'), { setModelStatus, backend: () => status.backend });
  document.body.dataset.ready = 'true';
}

start().catch((e: unknown) => {
  const el = byId('status');
  el.textContent = `error: ${(e as Error).message}`;
  el.classList.add('error');
  document.body.dataset.ready = 'error';
});
