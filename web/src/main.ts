/**
 * The explorer's shell: tabs (with the URL hash), the model switcher, the status line, and the
 * views. The server lists its model folders (models.json); the switcher names each with its kind.
 * A translation model is shown by Translate, a GPT by Generate: choosing one in the switcher opens
 * it (through the folder module, from its URL) in its view and shows that view. At start, Translate
 * has the first translation model and Generate the first GPT (or ?model=ID's); the Translate tab is
 * hidden when no translation model is served. Generate is always there: a GPT folder can be opened
 * from disk in the page too. The other views need no model.
 */
import './style.css';
import { chooseBackend, type BackendChoice } from './backend.ts';
import { byId, h } from './dom.ts';
import { fetchServedModels, KIND_LABELS, viewOf, type ServedEntry } from './model.ts';
import { initExport } from './views/export.ts';
import { initGenerate, type GenerateView } from './views/generate.ts';
import { initPositional } from './views/positional.ts';
import { initSteps } from './views/steps.ts';
import { initTranslate, type TranslateView } from './views/translate.ts';

const VIEWS = ['translate', 'generate', 'positional', 'steps', 'export'] as const;
type View = (typeof VIEWS)[number];
type ModelView = 'translate' | 'generate';

const status: { backend: BackendChoice | null; model: string } = { backend: null, model: 'loading the model…' };
/** The model view a link to #translate opens (Generate when no translation model is served). */
let modelView: ModelView = 'translate';
/** The served folder each model view has (its id), for the switcher. */
const inView: Record<ModelView, string> = { translate: '', generate: '' };
let switcher: HTMLSelectElement | null = null;

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

/** Set when the Generate view is not the first model view: it is built on its first visit. */
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
  // The switcher shows the model of the model view on screen.
  if (switcher && (view === 'translate' || view === 'generate') && inView[view]) switcher.value = inView[view];
}

function route(): void {
  const v = location.hash.slice(1) as View;
  show(!VIEWS.includes(v) || (v === 'translate' && modelView !== 'translate') ? modelView : v);
}

/** The switcher: one option per served folder, "name · kind". */
function modelSwitcher(models: readonly ServedEntry[]): HTMLSelectElement {
  const sel = h('select', {
    id: 'model-select',
    'data-testid': 'model-select',
    'aria-label': 'Model',
    title: 'the model folders qkv explore serves',
  });
  for (const m of models) {
    const o = h('option', {
      value: m.id,
      text: `${m.name} · ${m.kind ? KIND_LABELS[m.kind] : 'unreadable'}`,
      title: m.description,
    });
    o.dataset.kind = m.kind ?? '';
    sel.append(o);
  }
  return sel;
}

async function start(): Promise<void> {
  const servedP = fetchServedModels();
  for (const b of document.querySelectorAll<HTMLButtonElement>('#tabs [data-view]')) {
    b.addEventListener('click', () => {
      location.hash = b.dataset.view!;
    });
  }
  window.addEventListener('hashchange', route);
  route();
  renderStatus();
  const params = new URLSearchParams(location.search);
  const pref = (params.get('backend') ?? 'auto') as 'auto' | 'js' | 'wasm';
  const [backend, served] = await Promise.all([chooseBackend(pref), servedP]);
  status.backend = backend;
  const { models } = served;
  const asked = models.find((m) => m.id === params.get('model'));
  const first = (view: ModelView) =>
    (asked && viewOf(asked) === view ? asked : models.find((m) => viewOf(m) === view)) ?? null;
  const firstTranslation = first('translate');
  const firstGpt = first('generate');
  // A translation model: Translate first (unless ?model= names a GPT). A GPT, none, or a config that fails: Generate,
  // where a GPT folder can be opened too.
  modelView = firstTranslation ? 'translate' : 'generate';
  const startView: ModelView = asked ? viewOf(asked) : modelView;
  byId('tab-translate').hidden = !firstTranslation;
  byId('tab-generate').hidden = false;

  const deps = {
    setModelStatus,
    backend: () => status.backend,
    served,
    onModel: (id: string) => {
      inView.generate = id;
    },
  };
  let generate: GenerateView | null = null;
  const translate: TranslateView | null = firstTranslation ? initTranslate(byId('view-translate'), deps) : null;
  const openGenerate = (): GenerateView => {
    lazyGenerate = null;
    generate ??= initGenerate(byId('view-generate'), deps);
    return generate;
  };
  inView.translate = firstTranslation?.id ?? '';
  inView.generate = firstGpt?.id ?? '';
  if (models.length > 0) {
    switcher = modelSwitcher(models);
    switcher.addEventListener('change', () => {
      const m = models.find((x) => x.id === switcher!.value)!;
      const view = viewOf(m);
      inView[view] = m.id;
      if (view === 'translate') void translate!.use(m);
      else void openGenerate().use(m);
      location.hash = view;
    });
    byId('status').before(h('label', { class: 'model-switcher' }, h('span', { text: 'Model ' }), switcher));
  }
  if (startView === 'translate') {
    lazyGenerate = () => {
      void openGenerate().use(firstGpt);
    };
  }
  if (asked) location.hash = startView;
  route();
  renderStatus();
  initPositional(byId('view-positional'));
  initSteps(byId('view-steps'));
  initExport(
    byId('view-export'),
    firstTranslation ? (firstGpt ? ['translate', 'generate'] : ['translate']) : ['generate'],
  );
  if (startView === 'generate') await openGenerate().use(firstGpt);
  if (translate) {
    const load = translate.use(firstTranslation);
    // Translate is the page's first view: ready once its model is loaded; otherwise it loads behind.
    if (startView === 'translate') await load;
  }
  document.body.dataset.ready = 'true';
}

start().catch((e: unknown) => {
  const el = byId('status');
  el.textContent = `error: ${(e as Error).message}`;
  el.classList.add('error');
  document.body.dataset.ready = 'error';
});
