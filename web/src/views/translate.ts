/**
 * Translate view: type English, get its translation from the served translation model chosen in
 * the model switcher (EN→DE, EN→FR, ...; greedy or beam search, run in the browser by qkv),
 * then look at every attention map: encoder self-attention, decoder masked self-attention and
 * cross-attention, per layer and head (heatmap with tokens on both axes, values on hover), the
 * head view (lines weighted by attention) and the model view (all layers × heads).
 */
import {
  KIND_NAMES,
  translateWithAttention,
  type AttentionKind,
  type TranslationAttention,
} from '../../../src/viz/attention-data.ts';
import { translationMaps } from '../../../src/viz/translation.ts';
import type { Seq2Seq } from '../../../src/models/seq2seq.ts';
import type { BpeTokenizer } from '../../../src/text/bpe.ts';
import { field, h, onSubmit, select } from '../dom.ts';
import { namedEnsemble, NO_MODEL, openServed, type ModelViewDeps, type ServedEntry } from '../model.ts';
import { attentionPanel } from './attention-panel.ts';

interface Loaded {
  model: Seq2Seq;
  tokenizer: BpeTokenizer;
  /** The target side's: `tokenizer` itself unless the model has separate vocabularies. */
  targetTokenizer: BpeTokenizer;
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
    field('English', src),
    field('Decoding', decoding),
    field('Beam size', beam),
    go,
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

  root.append(
    h(
      'div',
      { class: 'panel' },
      info,
      form,
      h('p', { class: 'result' }, outLabel, out, ' ', timing),
      err,
      warn,
      tokens,
    ),
    ...panel.elements,
  );

  let loaded: Loaded | null = null;
  let current: TranslationAttention | null = null;

  const syncDecoding = () => {
    beam.disabled = decoding.value !== 'beam';
  };
  decoding.addEventListener('change', syncDecoding);
  syncDecoding();

  const showMaps = () => {
    if (current) panel.show(translationMaps(current, kind.value as AttentionKind));
  };

  const showTokens = (t: TranslationAttention) => {
    const chips = (xs: string[]) => xs.map((x) => h('span', { class: 'chip', text: x }));
    tokens.replaceChildren(
      h('div', {}, h('span', { class: 'label', text: `source (${t.srcTokens.length}): ` }), ...chips(t.srcTokens)),
      h('div', {}, h('span', { class: 'label', text: `output (${t.outTokens.length}): ` }), ...chips(t.outTokens)),
    );
  };

  kind.addEventListener('change', showMaps);

  onSubmit(form, {
    button: go,
    error: err,
    ready: () => loaded !== null,
    start() {
      out.textContent = '…';
      timing.textContent = 'translating';
      warn.hidden = true;
    },
    work() {
      const t0 = performance.now();
      const useBeam = decoding.value === 'beam';
      const size = Number(beam.value);
      if (useBeam && (beam.value.trim() === '' || !Number.isInteger(size) || size < 2 || size > 16))
        throw new Error(`the beam size must be a whole number from 2 to 16, got '${beam.value}'`);
      const separate = loaded!.targetTokenizer !== loaded!.tokenizer;
      const t = translateWithAttention(loaded!.model, loaded!.tokenizer, src.value, {
        beam: useBeam ? size : 1,
        ...(separate && { targetTokenizer: loaded!.targetTokenizer }),
      });
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
      const tok = loaded!.tokenizer;
      const unknown = unknownCharacters(tok, t.source, t.srcIds);
      if (unknown.length > 0) {
        warn.textContent =
          `Not in this model's vocabulary: ${unknown.map((c) => `'${c}'`).join(', ')}; ` +
          `the model read ${unknown.length === 1 ? 'it' : 'each'} as ${tok.idToToken(tok.unkId) ?? '<unk>'}, ` +
          'so this translation says little about the sentence.';
        warn.hidden = false;
      }
      showTokens(t);
      showMaps();
      root.dataset.translated = String(Number(root.dataset.translated ?? 0) + 1);
    },
    fail() {
      // Nothing of the previous run is left under the message.
      current = null;
      out.textContent = '';
      timing.textContent = '';
      warn.hidden = true;
      tokens.replaceChildren();
      panel.show(null);
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
    let opened: Awaited<ReturnType<typeof openServed>>;
    try {
      opened = await openServed(entry, deps.backend()?.name ?? 'js', (s) => {
        if (mine === opening) info.textContent = s;
      });
      if (opened.kind !== 'seq2seq')
        throw new Error(
          `${entry.name} is a ${opened.kind === 'gpt' ? 'GPT' : 'GPT-2'}, not a translation model: see Generate`,
        );
    } catch (e) {
      if (mine === opening) fail((e as Error).message);
      return;
    }
    if (mine !== opening) return; // another model was chosen meanwhile
    loaded = {
      model: opened.model,
      tokenizer: opened.tokenizer,
      targetTokenizer: opened.targetTokenizer,
      name: entry.name,
    };
    const c = loaded.model.config;
    info.textContent =
      `Model ${loaded.name}: dModel ${c.dModel}, ${c.numEncoderLayers} ` +
      `encoder + ${c.numDecoderLayers} decoder layers, ${c.nhead} heads, ` +
      (loaded.targetTokenizer === loaded.tokenizer
        ? `vocabulary ${loaded.tokenizer.vocabSize}`
        : `vocabularies ${loaded.tokenizer.vocabSize} (source) and ${loaded.targetTokenizer.vocabSize} (target)`) +
      `, ${loaded.model.numParameters().toLocaleString('en')} parameters.`;
    const members = namedEnsemble(opened.config);
    if (members.length > 0) {
      info.textContent +=
        ` Its folder names an ensemble (${members.join(', ')}) that qkv ` +
        `translate and qkv eval decode with as well; this page runs and shows ` +
        `this model alone, so its translations can differ from theirs.`;
    }
    outLabel.textContent = `${targetLanguage(opened.config)}: `;
    // The last translation was another model's: cleared.
    current = null;
    out.textContent = '';
    timing.textContent = '';
    warn.hidden = true;
    err.hidden = true;
    tokens.replaceChildren();
    panel.show(null);
    deps.setModelStatus(`model: ${loaded.name}`);
    root.dataset.model = entry.id;
    go.disabled = false;
  };

  function fail(message: string): void {
    info.textContent = `Could not load the model: ${message}`;
    info.classList.add('error');
    deps.setModelStatus('model failed to load');
  }

  return { use };
}

/** The characters of `text` that `tokenizer` reads as its unknown token (none when `ids` holds no unk). */
function unknownCharacters(tokenizer: BpeTokenizer, text: string, ids: readonly number[]): string[] {
  if (!ids.includes(tokenizer.unkId)) return [];
  const chars = new Set(Array.from(text).filter((c) => c.trim() !== ''));
  return [...chars].filter((c) => tokenizer.encode(c).includes(tokenizer.unkId));
}
