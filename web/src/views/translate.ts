/**
 * Translate view: type English, get German (greedy or beam search, run in the browser by qkv),
 * then look at every attention map: encoder self-attention, decoder masked self-attention and
 * cross-attention, per layer and head (heatmap with tokens on both axes, values on hover), the
 * head view (lines weighted by attention) and the model view (all layers × heads).
 */
import { KIND_NAMES, loadModelFromFiles, translateWithAttention, type AttentionKind, type TranslationAttention } from '../../../src/viz/attention-data.ts';
import { attentionHeadViewSvg, attentionHeatmapSvg, attentionModelViewSvg, stackSize } from '../../../src/viz/translation.ts';
import type { Seq2Seq } from '../../../src/models/seq2seq.ts';
import type { BpeTokenizer } from '../../../src/text/bpe.ts';
import type { BackendChoice } from '../backend.ts';
import { field, h, nextFrame, select, setOptions } from '../dom.ts';
import { figureBox, hideFigure, showFigure } from '../figures.ts';

interface Loaded {
  model: Seq2Seq;
  tokenizer: BpeTokenizer;
  name: string;
}

async function fetchOk(path: string): Promise<Response> {
  const r = await fetch(path);
  if (!r.ok) throw Object.assign(new Error(`${path}: HTTP ${r.status}`), { status: r.status });
  return r;
}

async function loadModel(progress: (s: string) => void): Promise<Loaded | null> {
  let cfgRes: Response;
  try {
    cfgRes = await fetchOk('model/config.json');
  } catch (e) {
    if ((e as { status?: number }).status === 404) return null;
    throw e;
  }
  const name = decodeURIComponent(cfgRes.headers.get('X-Qkv-Model') ?? 'model');
  const config: unknown = await cfgRes.json();
  const tokenizer: unknown = await (await fetchOk('model/tokenizer.json')).json();
  const wres = await fetchOk('model/model.safetensors');
  const total = Number(wres.headers.get('Content-Length') ?? 0);
  const reader = wres.body!.getReader();
  const chunks: Uint8Array[] = [];
  let got = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    got += value.length;
    progress(`loading ${name}: ${(got / 1e6).toFixed(1)}${total ? ` / ${(total / 1e6).toFixed(1)}` : ''} MB`);
  }
  const bytes = new Uint8Array(got);
  let off = 0;
  for (const c of chunks) {
    bytes.set(c, off);
    off += c.length;
  }
  const { model, tokenizer: tok } = loadModelFromFiles(config, tokenizer, bytes);
  return { model, tokenizer: tok, name };
}

export interface TranslateDeps {
  setModelStatus(text: string): void;
  backend(): BackendChoice | null;
}

export async function initTranslate(root: HTMLElement, deps: TranslateDeps): Promise<void> {
  const info = h('p', { class: 'model-info', id: 'model-info', 'data-testid': 'model-info', text: 'Loading the model…' });
  const src = h('input', { id: 'src', 'data-testid': 'src', type: 'text', size: 64, value: 'Two young men are playing soccer in a park.', autocomplete: 'off', spellcheck: false });
  const decoding = select('decoding', [['greedy', 'greedy'], ['beam', 'beam search']], 'greedy');
  const beam = h('input', { id: 'beam', type: 'number', min: 2, max: 16, value: 4, 'data-testid': 'beam' });
  const go = h('button', { type: 'submit', id: 'translate', 'data-testid': 'translate', text: 'Translate', disabled: true });
  const form = h('form', { id: 'translate-form', class: 'row' }, field('English', src), field('Decoding', decoding), field('Beam size', beam), go);
  const out = h('output', { id: 'translation', 'data-testid': 'translation' });
  const timing = h('small', { id: 'timing', class: 'muted' });
  const err = h('p', { class: 'error', id: 'translate-error', hidden: true });
  const tokens = h('div', { id: 'tokens', class: 'tokens' });

  const kind = select('kind', (Object.keys(KIND_NAMES) as AttentionKind[]).map((k) => [k, KIND_NAMES[k]] as const), 'cross');
  const layer = select('layer', []);
  const head = select('head', []);
  const allHeads = h('input', { type: 'checkbox', id: 'all-heads', checked: true });
  const controls = h('div', { class: 'row controls', id: 'attn-controls', hidden: true },
    field('Attention', kind), field('Layer', layer), field('Head', head), field('Head view: all heads', allHeads));
  const figHeat = figureBox('heatmap');
  const figHead = figureBox('headview');
  const figModel = figureBox('modelview');
  const hint = h('p', { class: 'muted hint', hidden: true, text: 'Hover a cell for its value. Click a row to follow that token in the head view; click a thumbnail of the model view to open that head.' });

  root.append(
    h('div', { class: 'panel' }, info, form, h('p', { class: 'result' }, h('span', { class: 'label', text: 'German: ' }), out, ' ', timing), err, tokens),
    controls, hint,
    h('div', { class: 'figs' }, figHeat, figHead),
    figModel,
  );

  let loaded: Loaded | null = null;
  let current: TranslationAttention | null = null;
  let highlight: number | null = null;

  const syncDecoding = () => {
    beam.disabled = decoding.value !== 'beam';
  };
  decoding.addEventListener('change', syncDecoding);
  syncDecoding();

  const fillSelectors = () => {
    if (!current) return;
    const k = kind.value as AttentionKind;
    const { layers, heads } = stackSize(current, k);
    const first = head.options.length === 0;
    setOptions(layer, Array.from({ length: layers }, (_, i) => [String(i), `layer ${i + 1}`] as const));
    setOptions(head, [['mean', 'mean of heads'] as const, ...Array.from({ length: heads }, (_, i) => [String(i), `head ${i + 1}`] as const)]);
    if (first && heads > 0) head.value = '0';
  };

  const draw = () => {
    if (!current) return;
    const k = kind.value as AttentionKind;
    if (stackSize(current, k).layers === 0) {
      for (const [el, id] of [[figHeat, 'heatmap'], [figHead, 'headview'], [figModel, 'modelview']] as const) hideFigure(el, id);
      return;
    }
    const l = Number(layer.value);
    const hd = head.value === 'mean' ? 'mean' : Number(head.value);
    const heat = attentionHeatmapSvg(current, k, l, hd);
    showFigure(figHeat, { id: 'heatmap', view: 'Translate', title: `${KIND_NAMES[k]}, layer ${l + 1}, ${hd === 'mean' ? 'mean of heads' : `head ${hd + 1}`}`, svg: heat });
    const ids = allHeads.checked || hd === 'mean' ? undefined : [hd];
    showFigure(figHead, { id: 'headview', view: 'Translate', title: `head view: ${KIND_NAMES[k]}, layer ${l + 1}`, svg: attentionHeadViewSvg(current, k, l, ids, highlight) });
    showFigure(figModel, { id: 'modelview', view: 'Translate', title: `model view: ${KIND_NAMES[k]}`, svg: attentionModelViewSvg(current, k, hd === 'mean' ? null : { layer: l, head: hd }) });
  };

  const showTokens = (t: TranslationAttention) => {
    const chips = (xs: string[]) => xs.map((x) => h('span', { class: 'chip', text: x }));
    tokens.replaceChildren(
      h('div', {}, h('span', { class: 'label', text: `source (${t.srcTokens.length}): ` }), ...chips(t.srcTokens)),
      h('div', {}, h('span', { class: 'label', text: `output (${t.outTokens.length}): ` }), ...chips(t.outTokens)),
    );
  };

  kind.addEventListener('change', () => {
    highlight = null;
    fillSelectors();
    draw();
  });
  layer.addEventListener('change', draw);
  head.addEventListener('change', draw);
  allHeads.addEventListener('change', draw);
  figHeat.addEventListener('click', (e) => {
    const cell = (e.target as Element).closest('[data-row]');
    if (!cell) return;
    const r = Number(cell.getAttribute('data-row'));
    highlight = highlight === r ? null : r;
    draw();
  });
  figModel.addEventListener('click', (e) => {
    const g = (e.target as Element).closest('.thumb');
    if (!g) return;
    layer.value = g.getAttribute('data-layer')!;
    head.value = g.getAttribute('data-head')!;
    draw();
  });

  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    if (!loaded) return;
    err.hidden = true;
    go.disabled = true;
    out.textContent = '…';
    timing.textContent = 'translating';
    await nextFrame();
    try {
      const t0 = performance.now();
      const useBeam = decoding.value === 'beam';
      const t = translateWithAttention(loaded.model, loaded.tokenizer, src.value, { beam: useBeam ? Math.max(2, Number(beam.value) || 4) : 1 });
      const ms = performance.now() - t0;
      current = t;
      highlight = null;
      out.textContent = t.translation === '' ? '(empty)' : t.translation;
      timing.textContent = `${ms.toFixed(0)} ms, ${useBeam ? `beam ${beam.value}` : 'greedy'}, ${deps.backend()?.name ?? ''} backend${t.finished ? '' : ', cut at the length limit'}`;
      showTokens(t);
      controls.hidden = false;
      hint.hidden = false;
      fillSelectors();
      draw();
      root.dataset.translated = String(Number(root.dataset.translated ?? 0) + 1);
    } catch (x) {
      out.textContent = '';
      timing.textContent = '';
      err.textContent = (x as Error).message;
      err.hidden = false;
    } finally {
      go.disabled = false;
    }
  });

  try {
    loaded = await loadModel((s) => {
      info.textContent = s;
    });
  } catch (e) {
    info.textContent = `Could not load the model: ${(e as Error).message}`;
    info.classList.add('error');
    deps.setModelStatus('model failed to load');
    return;
  }
  if (!loaded) {
    info.textContent = 'No model is being served. Start the explorer with a model folder: qkv explore --model DIR (a folder with config.json, tokenizer.json, model.safetensors, e.g. from qkv train). The other views work without one.';
    info.classList.add('warning');
    deps.setModelStatus('no model');
    return;
  }
  const c = loaded.model.config;
  info.textContent = `Model ${loaded.name}: dModel ${c.dModel}, ${c.numEncoderLayers} encoder + ${c.numDecoderLayers} decoder layers, ${c.nhead} heads, vocabulary ${loaded.tokenizer.vocabSize}, ${loaded.model.numParameters().toLocaleString('en')} parameters.`;
  deps.setModelStatus(`model: ${loaded.name}`);
  go.disabled = false;
}
