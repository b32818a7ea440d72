/**
 * Translate view: type English, get its translation from the served translation model chosen in
 * the model switcher (EN→DE, EN→FR, ...; greedy or beam search, run in the browser by qkv; a Hugging Face NLLB /
 * M2M100 folder between the languages chosen, a T5 folder's output for the task chosen, with its relative
 * position bias drawn per head: t5-bias.ts),
 * then look at every attention map: encoder self-attention, decoder masked self-attention and
 * cross-attention, per layer and head (heatmap with tokens on both axes, values on hover), the
 * head view (lines weighted by attention) and the model view (all layers × heads). The model is
 * opened and run in the model worker (runner.ts): the page stays responsive, and a long run can be
 * cancelled.
 */
import { KIND_NAMES, type AttentionKind, type TranslationAttention } from '../../../src/viz/attention-data.ts';
import { translationMaps } from '../../../src/viz/translation.ts';
import { field, h, onSubmit, select, setOptions } from '../dom.ts';
import { namedEnsemble, NO_MODEL, type ModelViewDeps, type ServedEntry } from '../model.ts';
import type { TranslateChoices, TranslationInfo } from '../model-worker.ts';
import { runner } from '../runner.ts';
import { attentionPanel } from './attention-panel.ts';
import { t5BiasPanel } from './t5-bias.ts';

interface Loaded {
  info: TranslationInfo;
  name: string;
}

/** The target language's name from config.json's training.direction ('en-fr' → 'French'). */
const LANGUAGES: Record<string, string> = { de: 'German', fr: 'French', en: 'English', cs: 'Czech' };

function targetLanguage(config: unknown): string {
  const d = (config as { training?: { direction?: unknown } } | null)?.training?.direction;
  const tgt = typeof d === 'string' ? d.split('-')[1] : undefined;
  return (tgt && LANGUAGES[tgt]) ?? 'Translation';
}

export interface TranslateView {
  /** Open this served translation model (null: none is served) and use it from now on. */
  use(entry: ServedEntry | null): Promise<void>;
}

export function initTranslate(root: HTMLElement, deps: ModelViewDeps): TranslateView {
  const info = h('p', {
    class: 'model-info',
    id: 'model-info',
    'data-testid': 'model-info',
    text: 'Loading the model…',
  });
  const src = h('input', {
    id: 'src',
    'data-testid': 'src',
    type: 'text',
    size: 64,
    value: 'Two young men are playing soccer in a park.',
    autocomplete: 'off',
    spellcheck: false,
  });
  const decoding = select(
    'decoding',
    [
      ['greedy', 'greedy'],
      ['beam', 'beam search'],
    ],
    'greedy',
  );
  const beam = h('input', { id: 'beam', type: 'number', min: 2, max: 16, value: 4, 'data-testid': 'beam' });
  // An NLLB / M2M100 folder's languages (its codes, e.g. eng_Latn → deu_Latn); a T5 folder's task (its prefix).
  const srcLang = select('src-lang', []);
  const tgtLang = select('tgt-lang', []);
  const langFields = [field('From', srcLang), field('To', tgtLang)];
  const task = select('t5-task', []);
  const taskField = field('Task', task);
  const srcField = field('English', src);
  for (const f of [...langFields, taskField]) f.hidden = true;
  const go = h('button', {
    type: 'submit',
    id: 'translate',
    'data-testid': 'translate',
    text: 'Translate',
    disabled: true,
  });
  const form = h(
    'form',
    { id: 'translate-form', class: 'row' },
    srcField,
    ...langFields,
    taskField,
    field('Decoding', decoding),
    field('Beam size', beam),
    go,
  );
  const folderInput = h('input', {
    type: 'file',
    id: 'translate-folder-input',
    'data-testid': 'translate-folder-input',
    webkitdirectory: true,
    multiple: true,
  });
  const folderStatus = h('span', {
    id: 'translate-folder-status',
    'data-testid': 'translate-folder-status',
    class: 'muted',
  });
  const picker = h(
    'div',
    { class: 'dropzone' },
    field('Open a translation folder', folderInput),
    h('span', {
      class: 'muted',
      text:
        ' (a qkv train folder, or a Hugging Face Marian download such as Helsinki-NLP/opus-mt-en-de: ' +
        'config.json, source.spm, target.spm, vocab.json, model.safetensors; an NLLB / M2M100 or T5 / Flan-T5 ' +
        'folder: config.json, tokenizer.json, model.safetensors). Nothing leaves this page. ',
    }),
    folderStatus,
  );
  const out = h('output', { id: 'translation', 'data-testid': 'translation' });
  const timing = h('small', { id: 'timing', class: 'muted' });
  const err = h('p', { class: 'error', id: 'translate-error', role: 'alert', hidden: true });
  const warn = h('p', { class: 'warning', id: 'translate-warning', role: 'status', hidden: true });
  const tokens = h('div', { id: 'tokens', class: 'tokens' });
  const outLabel = h('span', { class: 'label', text: 'Translation: ' });

  const kind = select(
    'kind',
    (Object.keys(KIND_NAMES) as AttentionKind[]).map((k) => [k, KIND_NAMES[k]] as const),
    'cross',
  );
  const panel = attentionPanel('Translate', '', [field('Attention', kind)]);
  const bias = t5BiasPanel();

  root.append(
    h(
      'div',
      { class: 'panel' },
      info,
      picker,
      form,
      h('p', { class: 'result' }, outLabel, out, ' ', timing),
      err,
      warn,
      tokens,
    ),
    ...panel.elements,
    bias.element,
  );

  let loaded: Loaded | null = null;
  let current: TranslationAttention | null = null;

  const syncDecoding = () => {
    beam.disabled = decoding.value !== 'beam';
  };
  decoding.addEventListener('change', syncDecoding);
  syncDecoding();

  /** The maps of the chosen kind, drawn in pieces (paced.ts): resolves when the heatmap and head view are whole. */
  const showMaps = async () => {
    if (current) await panel.show(translationMaps(current, kind.value as AttentionKind));
  };

  const showTokens = (t: TranslationAttention) => {
    const chips = (xs: string[]) => xs.map((x) => h('span', { class: 'chip', text: x }));
    tokens.replaceChildren(
      h('div', {}, h('span', { class: 'label', text: `source (${t.srcTokens.length}): ` }), ...chips(t.srcTokens)),
      h('div', {}, h('span', { class: 'label', text: `output (${t.outTokens.length}): ` }), ...chips(t.outTokens)),
    );
  };

  kind.addEventListener('change', () => void showMaps());

  onSubmit(form, {
    button: go,
    error: err,
    ready: () => loaded !== null,
    doing: 'translating',
    cancel: () => runner.cancel(),
    start() {
      out.textContent = '…';
      timing.textContent = 'translating';
      warn.hidden = true;
    },
    async work() {
      const t0 = performance.now();
      const useBeam = decoding.value === 'beam';
      const size = Number(beam.value);
      if (useBeam && (beam.value.trim() === '' || !Number.isInteger(size) || size < 2 || size > 16))
        throw new Error(`the beam size must be a whole number from 2 to 16, got '${beam.value}'`);
      const family = loaded?.info.hf?.family;
      const choices: TranslateChoices =
        family === 'm2m100'
          ? { srcLang: srcLang.value, tgtLang: tgtLang.value }
          : family === 't5'
            ? { task: task.value }
            : {};
      const r = await runner.call('translate', { text: src.value, beam: useBeam ? size : 1, ...choices });
      const { result: t, unknown } = r;
      const ms = performance.now() - t0;
      current = t;
      out.textContent = t.translation === '' ? '(empty)' : t.translation;
      timing.textContent =
        `${ms.toFixed(0)} ms, ${useBeam ? `beam ${size}` : 'greedy'}, ` +
        `${deps.backend()?.name ?? ''} ` +
        `backend${t.finished ? '' : ', cut at the length limit'}`;
      if (t.truncatedFrom !== undefined)
        timing.textContent +=
          `; the sentence has ${t.truncatedFrom} tokens, this model reads ` +
          `${t.srcIds.length}: only the first ${t.srcIds.length} were translated`;
      if (unknown.length > 0) {
        warn.textContent =
          `Not in this model's vocabulary: ${unknown.map((c) => `'${c}'`).join(', ')}; ` +
          `the model read ${unknown.length === 1 ? 'it' : 'each'} as <unk>, ` +
          'so this translation says little about the sentence.';
        warn.hidden = false;
      }
      showTokens(t);
      bias.show(r.bias ?? null, { encoder: t.srcTokens, decoder: t.tgtTokens });
      await showMaps();
      root.dataset.translated = String(Number(root.dataset.translated ?? 0) + 1);
    },
    fail() {
      // Nothing of the previous run is left under the message.
      current = null;
      out.textContent = '';
      timing.textContent = '';
      warn.hidden = true;
      tokens.replaceChildren();
      void panel.show(null);
      bias.show(null, { encoder: [], decoder: [] });
    },
  });

  let opening = 0;
  const use = async (entry: ServedEntry | null): Promise<void> => {
    const mine = ++opening;
    loaded = null;
    go.disabled = true;
    info.classList.remove('error', 'warning');
    if (deps.served.error) return fail(deps.served.error.message);
    if (!entry) {
      info.textContent = NO_MODEL;
      info.classList.add('warning');
      deps.setModelStatus('no model');
      return;
    }
    info.textContent = `Loading ${entry.name}…`;
    deps.setModelStatus(`loading ${entry.name}…`);
    let opened: TranslationInfo;
    try {
      opened = (await runner.call('openServed', { view: 'translate', entry }, (s) => {
        if (mine === opening) info.textContent = s;
      })) as TranslationInfo;
    } catch (e) {
      if (mine === opening) fail((e as Error).message);
      return;
    }
    if (mine !== opening) return; // another model was chosen meanwhile
    show(opened, entry.name);
    root.dataset.model = entry.id;
  };

  /** Show an opened translation model (served or picked) and make it the one Translate runs. */
  function show(opened: TranslationInfo, name: string): void {
    loaded = { info: opened, name };
    info.classList.remove('error', 'warning');
    const c = opened;
    info.textContent =
      `Model ${loaded.name}: dModel ${c.dModel}, ${c.numEncoderLayers} ` +
      `encoder + ${c.numDecoderLayers} decoder layers, ${c.nhead} heads, ` +
      (c.targetVocabSize === null
        ? `vocabulary ${c.vocabSize}`
        : `vocabularies ${c.vocabSize} (source) and ${c.targetVocabSize} (target)`) +
      `, ${c.parameters.toLocaleString('en')} parameters.`;
    const members = namedEnsemble(opened.config);
    if (members.length > 0) {
      info.textContent +=
        ` Its folder names an ensemble (${members.join(', ')}) that qkv ` +
        `translate and qkv eval decode with as well; this page runs and shows ` +
        `this model alone, so its translations can differ from theirs.`;
    }
    outLabel.textContent = `${targetLanguage(opened.config)}: `;
    const hf = opened.hf;
    for (const f of langFields) f.hidden = hf?.family !== 'm2m100';
    taskField.hidden = hf?.family !== 't5';
    srcField.firstChild!.textContent = hf ? 'Text' : 'English';
    if (hf?.family === 'm2m100') {
      const codes = hf.languages.map((c) => [c, c] as const);
      setOptions(srcLang, codes, false);
      setOptions(tgtLang, codes, false);
      srcLang.value = hf.srcLang;
      tgtLang.value = hf.tgtLang ?? (hf.languages.includes('deu_Latn') ? 'deu_Latn' : hf.languages[0]);
      outLabel.textContent = 'Translation: ';
      info.textContent += ` NLLB / M2M100: ${hf.languages.length} language codes; the target's code is forced first.`;
    }
    if (hf?.family === 't5') {
      setOptions(
        task,
        [
          ['text2text-generation', 'none: the text as typed'],
          ...hf.tasks.map((x) => [x.name, x.prefix ? `${x.name} (“${x.prefix.trim()}”)` : x.name] as const),
        ],
        false,
      );
      task.value = hf.tasks.find((x) => x.name.startsWith('translation_'))?.name ?? 'text2text-generation';
      outLabel.textContent = 'Output: ';
      info.textContent += ' T5: no position encoding; its relative position bias is drawn per head below.';
    }
    // The last translation was another model's: cleared.
    current = null;
    out.textContent = '';
    timing.textContent = '';
    warn.hidden = true;
    err.hidden = true;
    tokens.replaceChildren();
    void panel.show(null);
    bias.show(null, { encoder: [], decoder: [] });
    deps.setModelStatus(`model: ${loaded.name}`);
    go.disabled = false;
  }

  folderInput.addEventListener('change', async () => {
    if (!folderInput.files || folderInput.files.length === 0) return;
    const files = [...folderInput.files];
    folderStatus.textContent = 'reading…';
    folderStatus.classList.remove('error');
    try {
      const r = await runner.call('openLocalTranslation', { files }, (s) => {
        folderStatus.textContent = s;
      });
      opening++; // a served model still loading does not replace it
      show(r, r.name);
      delete root.dataset.model;
      folderStatus.textContent = `opened ${r.name}`;
      root.dataset.opened = String(Number(root.dataset.opened ?? 0) + 1);
    } catch (e) {
      // The model in use (if any) stays.
      folderStatus.textContent = `Could not open the folder: ${(e as Error).message}`;
      folderStatus.classList.add('error');
    }
  });

  function fail(message: string): void {
    info.textContent = `Could not load the model: ${message}`;
    info.classList.add('error');
    deps.setModelStatus('model failed to load');
  }

  return { use };
}
