/**
 * The explorer's shell: tabs (with the URL hash), the model switcher, the status line, and the
 * views. The server lists its model folders (models.json); the switcher names each with its kind.
 * A translation model is shown by Translate, a GPT by Generate: choosing one in the switcher opens
 * it (through the folder module, from its URL) in its view and shows that view. At start, Translate
 * has the first translation model and Generate the first GPT (or ?model=ID's); the Translate tab is
 * hidden when no translation model is served. Generate is always there: a GPT folder can be opened
 * from disk in the page too. The other views need no model. A model chosen in the switcher is
 * remembered (localStorage, per view) and opened again on the next visit.
 *
 * Every model is opened and run in a Web Worker (model-worker.ts, through runner.ts), never on the
 * page's main thread. The backend switch says where: `auto` (WebGPU where the worker has a hardware
 * adapter, else wasm), WebGPU, wasm or js; `?backend=` in the URL picks one for the visit, the switch's choice is
 * remembered (localStorage) and applied by starting the worker again on it (runner.switchBackend), the
 * models reopened. The status line names the backend the models run on; its tooltip, backendInfo() in words
 * (the GPU's adapter, or the CPU threads) and why not another.
 *
 * The tabs are a WAI-ARIA tablist: the selected tab is the one tab stop, the arrow keys (Home, End)
 * move between tabs and show their view. The status line (aria-live) names the model of the model
 * view on screen, or of the model view last on screen while another view is.
 */
import './style.css';
import { BACKEND_PREFS, type BackendChoice, type BackendPref } from './backend.ts';
import { byId, h } from './dom.ts';
import { fetchServedModels, KIND_LABELS, viewOf, type ServedEntry } from './model.ts';
import { PAGE_DTYPES, pageMemory, type PageDType } from './page-memory.ts';
import { initExport } from './views/export.ts';
import { initFlow } from './views/flow.ts';
import { initGenerate, type GenerateView } from './views/generate.ts';
import { initPositional } from './views/positional.ts';
import { initSteps } from './views/steps.ts';
import { runner } from './runner.ts';
import { initTrain } from './views/train.ts';
import { initTranslate, type TranslateView } from './views/translate.ts';

const VIEWS = ['translate', 'generate', 'flow', 'positional', 'steps', 'train', 'export'] as const;
type View = (typeof VIEWS)[number];
type ModelView = 'translate' | 'generate';

let backend: BackendChoice | null = null;
/** Each model view's part of the status line: its model, or why it has none. */
const modelStatus: Record<ModelView, string> = { translate: 'loading the model…', generate: 'loading the model…' };
/** The model view on screen, or last on screen (null: none yet, `modelView` stands in). */
let shownModelView: ModelView | null = null;
/** The model view a link to #translate opens (Generate when no translation model is served). */
let modelView: ModelView = 'translate';
/** The served folder each model view has (its id), for the switcher. */
const inView: Record<ModelView, string> = { translate: '', generate: '' };
let switcher: HTMLSelectElement | null = null;

/** Where the model chosen for a view is remembered. */
const rememberKey = (view: ModelView) => `qkv-explorer.model.${view}`;

function remembered(view: ModelView): string | null {
  try {
    return localStorage.getItem(rememberKey(view));
  } catch {
    return null; // storage blocked: nothing is remembered
  }
}

function remember(view: ModelView, id: string): void {
  try {
    localStorage.setItem(rememberKey(view), id);
  } catch {
    /* storage blocked: the choice lasts this visit */
  }
}

/** Where the backend chosen in the switch is remembered. */
const BACKEND_KEY = 'qkv-explorer.backend';

function rememberedBackend(): BackendPref | null {
  try {
    const v = localStorage.getItem(BACKEND_KEY);
    return BACKEND_PREFS.includes(v as BackendPref) ? (v as BackendPref) : null;
  } catch {
    return null;
  }
}

/** What the switch shows for each choice. */
const BACKEND_LABELS: Record<BackendPref, string> = {
  auto: 'auto',
  webgpu: 'WebGPU',
  wasm: 'wasm',
  js: 'js',
};

/**
 * The backend switch: `pref` shown; a change is remembered, put in the URL when it has ?backend=, and applied by
 * a new model worker on that backend (the models reopened).
 */
function backendSwitcher(pref: BackendPref): HTMLSelectElement {
  const sel = h('select', {
    id: 'backend-select',
    'data-testid': 'backend-select',
    'aria-label': 'Backend',
    title: 'where the models run: auto takes WebGPU on a GPU, else wasm (WebAssembly on the CPU)',
  });
  for (const p of BACKEND_PREFS) sel.append(h('option', { value: p, text: BACKEND_LABELS[p] }));
  sel.value = pref;
  sel.addEventListener('change', async () => {
    const next = sel.value as BackendPref;
    try {
      localStorage.setItem(BACKEND_KEY, next);
    } catch {
      /* storage blocked: the choice lasts this visit */
    }
    const url = new URL(location.href);
    if (url.searchParams.has('backend')) {
      url.searchParams.set('backend', next);
      history.replaceState(history.state, '', url);
    }
    sel.disabled = true;
    setBackendChoice(null);
    try {
      const chosen = await runner.switchBackend(next);
      byId('status').classList.remove('error');
      setBackendChoice(chosen);
    } catch (e) {
      const el = byId('status');
      el.textContent = `error: ${(e as Error).message}`;
      el.classList.add('error');
    } finally {
      sel.disabled = false;
    }
  });
  return sel;
}

/**
 * The Weights switch: the dtype a Hugging Face decoder (GPT-2, Llama, Qwen2, Mistral) is held in, fp32, q8 or q4
 * (the pipelines' dtypes); a change reloads the page with ?dtype= (its models opened again in that dtype).
 */
function dtypeSwitcher(dtype: PageDType): HTMLSelectElement {
  const sel = h('select', {
    id: 'dtype-select',
    'data-testid': 'dtype-select',
    'aria-label': 'Weights',
    title:
      'what a Hugging Face decoder is held in: fp32, q8 (int8) or q4 (4.5 bits a weight); the page says what a ' +
      'folder will take before it loads it',
  });
  for (const d of PAGE_DTYPES) sel.append(h('option', { value: d, text: d }));
  sel.value = dtype;
  sel.addEventListener('change', () => {
    const url = new URL(location.href);
    url.searchParams.set('dtype', sel.value);
    location.assign(url);
  });
  return sel;
}

/** The backend the models run on now (null: being chosen), in the status line and on the body (data-backend). */
function setBackendChoice(b: BackendChoice | null): void {
  backend = b;
  if (b) document.body.dataset.backend = b.name;
  else delete document.body.dataset.backend;
  renderStatus();
  window.dispatchEvent(new CustomEvent('qkv:backend', { detail: b }));
}

/** The status setter of one model view. */
function modelStatusOf(view: ModelView): (text: string) => void {
  return (text) => {
    modelStatus[view] = text;
    renderStatus();
  };
}

function renderStatus(): void {
  const el = byId('status');
  const text = `${modelStatus[shownModelView ?? modelView]} · backend: ${backend ? backend.name : '…'}`;
  // Written only when it changes: a live region reads every write.
  if (el.textContent !== text) el.textContent = text;
  const launches = runner.threads?.launches ?? 0;
  const split =
    backend && backend.info.threads > 1
      ? ` · ${launches} kernel${launches === 1 ? '' : 's'} split among the threads so far`
      : '';
  el.title = (backend?.note ?? '') + split;
}

/** Set when the Generate view is not the first model view: it is built on its first visit. */
let lazyGenerate: (() => void) | null = null;

/** Whether the Train view is built (on its first visit). */
let trainBuilt = false;

function show(view: View): void {
  if (view === 'train' && !trainBuilt) {
    trainBuilt = true;
    initTrain(byId('view-train'));
  }
  if (view === 'generate' && lazyGenerate) {
    const init = lazyGenerate;
    lazyGenerate = null;
    init();
  }
  for (const v of VIEWS) {
    byId(`view-${v}`).hidden = v !== view;
    const tab = document.querySelector<HTMLElement>(`#tabs [data-view="${v}"]`);
    tab?.setAttribute('aria-selected', String(v === view));
    if (tab) tab.tabIndex = v === view ? 0 : -1;
  }
  if (view === 'translate' || view === 'generate') {
    shownModelView = view;
    // The switcher shows the model of the model view on screen.
    if (switcher && inView[view]) switcher.value = inView[view];
  }
  renderStatus();
}

/**
 * Show `view` now, and put it in the URL as a new history entry. Not by `location.hash`: a fragment
 * navigation to #translate or #generate targets the button of that id and takes the focus from the tab.
 */
function go(view: View): void {
  if (location.hash !== `#${view}`) history.pushState(null, '', `#${view}`);
  route();
}

/** The tablist's keys: Left, Right (wrapping), Home, End move to a shown tab and open its view. */
function onTabKey(e: KeyboardEvent): void {
  const tabs = [...document.querySelectorAll<HTMLButtonElement>('#tabs [role="tab"]')].filter((t) => !t.hidden);
  const at = tabs.indexOf(e.target as HTMLButtonElement);
  if (at < 0) return;
  const n = tabs.length;
  const to =
    e.key === 'ArrowRight'
      ? (at + 1) % n
      : e.key === 'ArrowLeft'
        ? (at - 1 + n) % n
        : e.key === 'Home'
          ? 0
          : e.key === 'End'
            ? n - 1
            : -1;
  if (to < 0) return;
  e.preventDefault();
  tabs[to].focus();
  go(tabs[to].dataset.view as View);
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
    b.addEventListener('click', () => go(b.dataset.view as View));
  }
  byId('tabs').addEventListener('keydown', onTabKey);
  window.addEventListener('hashchange', route);
  window.addEventListener('popstate', route);
  route();
  renderStatus();
  const params = new URLSearchParams(location.search);
  const asked = params.get('backend');
  if (asked !== null && !BACKEND_PREFS.includes(asked as BackendPref))
    throw new Error(`?backend=${asked}: expected one of ${BACKEND_PREFS.join(', ')}`);
  // ?backend= for this visit, else the switch's last choice, else auto.
  const pref: BackendPref = (asked as BackendPref | null) ?? rememberedBackend() ?? 'auto';
  // ?threads=N: the wasm backend's threads (default: the cores, at most 8).
  const threadsParam = params.get('threads');
  const threads = threadsParam === null ? undefined : Number(threadsParam);
  if (threads !== undefined && !(Number.isInteger(threads) && threads >= 1))
    throw new Error(`?threads=${threadsParam}: expected a whole number of threads >= 1`);
  // ?dtype=fp32|q8|q4: what a Hugging Face decoder's weights are held in (the Weights switch; default fp32).
  const dtypeParam = params.get('dtype');
  if (dtypeParam !== null && !PAGE_DTYPES.includes(dtypeParam as PageDType))
    throw new Error(`?dtype=${dtypeParam}: expected one of ${PAGE_DTYPES.join(', ')}`);
  const dtype = (dtypeParam as PageDType | null) ?? 'fp32';
  runner.onThreads = renderStatus;
  // The models live in the model worker: it chooses the backend they run on.
  const [chosen, served] = await Promise.all([
    runner.call('init', {
      pref,
      pageUrl: location.href,
      ...(threads !== undefined && { threads }),
      dtype,
      memory: pageMemory(),
    }),
    servedP,
  ]);
  setBackendChoice(chosen);
  byId('status').before(
    h('label', { class: 'backend-switcher' }, h('span', { text: 'Backend ' }), backendSwitcher(pref)),
    h('label', { class: 'backend-switcher' }, h('span', { text: 'Weights ' }), dtypeSwitcher(dtype)),
  );
  const { models } = served;
  const askedModel = models.find((m) => m.id === params.get('model'));
  // ?model=ID, else the model last chosen for the view, else the view's first.
  const first = (view: ModelView) =>
    (askedModel && viewOf(askedModel) === view
      ? askedModel
      : (models.find((m) => m.id === remembered(view) && viewOf(m) === view) ??
        models.find((m) => viewOf(m) === view))) ?? null;
  const firstTranslation = first('translate');
  const firstGpt = first('generate');
  // A translation model: Translate first (unless ?model= names a GPT). A GPT, none, or a config that fails: Generate,
  // where a GPT folder can be opened too.
  modelView = firstTranslation ? 'translate' : 'generate';
  const startView: ModelView = askedModel ? viewOf(askedModel) : modelView;
  byId('tab-translate').hidden = !firstTranslation;
  byId('tab-generate').hidden = false;

  const deps = (view: ModelView) => ({
    setModelStatus: modelStatusOf(view),
    backend: () => backend,
    served,
    onModel: (id: string) => {
      inView[view] = id;
    },
  });
  let generate: GenerateView | null = null;
  const translate: TranslateView | null = firstTranslation
    ? initTranslate(byId('view-translate'), deps('translate'))
    : null;
  const openGenerate = (): GenerateView => {
    lazyGenerate = null;
    generate ??= initGenerate(byId('view-generate'), deps('generate'));
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
      remember(view, m.id);
      if (view === 'translate') void translate!.use(m);
      else void openGenerate().use(m);
      go(view);
    });
    document
      .querySelector('.backend-switcher')!
      .before(h('label', { class: 'model-switcher' }, h('span', { text: 'Model ' }), switcher));
  }
  if (startView === 'translate') {
    lazyGenerate = () => {
      void openGenerate().use(firstGpt);
    };
  }
  if (askedModel) location.hash = startView;
  route();
  renderStatus();
  initFlow(byId('view-flow'), { served });
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
