/**
 * The explorer's shell: tabs (with the URL hash), the status line, and the views. The model view
 * follows what the server serves (config.json's format): Translate for a translation model,
 * Generate for a GPT; the other views need no model. Generate is always there: a GPT folder can be
 * opened in the page.
 */
import './style.css';
import { chooseBackend, type BackendChoice } from './backend.ts';
import { byId } from './dom.ts';
import { fetchServedModel } from './model.ts';
import { initExport } from './views/export.ts';
import { initGenerate } from './views/generate.ts';
import { initPositional } from './views/positional.ts';
import { initSteps } from './views/steps.ts';
import { initTranslate } from './views/translate.ts';

const VIEWS = ['translate', 'generate', 'positional', 'steps', 'export'] as const;
type View = (typeof VIEWS)[number];

const status: { backend: BackendChoice | null; model: string } = { backend: null, model: 'loading the model…' };
/** The model view in use (the other one's tab is hidden). */
let modelView: 'translate' | 'generate' = 'translate';

export function setModelStatus(text: string): void {
  status.model = text;
  renderStatus();
}

function renderStatus(): void {
  const b = status.backend;
  const el = byId('status');
  el.textContent = `${status.model} · backend: ${b ? b.name : '…'}`;
  el.title = b?.note ?? '';
}

/** Set when the Generate view is not the model view: it is built on its first visit. */
let lazyGenerate: (() => void) | null = null;

function show(view: View): void {
  if (view === 'generate' && lazyGenerate) {
    const init = lazyGenerate;
    lazyGenerate = null;
    init();
  }
  for (const v of VIEWS) {
    byId(`view-${v}`).hidden = v !== view;
    document.querySelector(`#tabs [data-view="${v}"]`)?.setAttribute('aria-selected', String(v === view));
  }
}

function route(): void {
  const v = location.hash.slice(1) as View;
  show(!VIEWS.includes(v) || v === 'translate' ? modelView : v);
}

async function start(): Promise<void> {
  const servedP = fetchServedModel();
  for (const b of document.querySelectorAll<HTMLButtonElement>('#tabs [data-view]')) {
    b.addEventListener('click', () => {
      location.hash = b.dataset.view!;
    });
  }
  window.addEventListener('hashchange', route);
  route();
  renderStatus();
  const pref = (new URLSearchParams(location.search).get('backend') ?? 'auto') as 'auto' | 'js' | 'wasm';
  const [backend, served] = await Promise.all([chooseBackend(pref), servedP]);
  status.backend = backend;
  // A translation model: Translate. A GPT, none, or a config that fails: Generate, where a GPT folder can be opened too.
  modelView = served.model?.kind === 'seq2seq' ? 'translate' : 'generate';
  byId('tab-translate').hidden = modelView !== 'translate';
  byId('tab-generate').hidden = false;
  const deps = { setModelStatus, backend: () => status.backend, served };
  if (modelView === 'translate') {
    lazyGenerate = () => {
      void initGenerate(byId('view-generate'), deps);
    };
  }
  route();
  renderStatus();
  initPositional(byId('view-positional'));
  initSteps(byId('view-steps'));
  initExport(byId('view-export'), modelView);
  if (modelView === 'generate') await initGenerate(byId('view-generate'), deps);
  else await initTranslate(byId('view-translate'), deps);
  document.body.dataset.ready = 'true';
}

start().catch((e: unknown) => {
  const el = byId('status');
  el.textContent = `error: ${(e as Error).message}`;
  el.classList.add('error');
  document.body.dataset.ready = 'error';
});
