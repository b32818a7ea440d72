/**
 * The Generate view's panel for a BERT-family encoder (BERT, DistilBERT, RoBERTa, XLM-R; issue 57, point 5):
 * an encoder generates nothing, so in its place the view shows its self-attention over a text (every layer ×
 * head: the heatmap, head view and model view of attention-panel.ts, and the neuron view) with its special tokens
 * ([CLS], [SEP], <s>, </s>) and padding shown as what they are, and a fill-mask box: a text with the folder's
 * mask token, the top tokens with their scores (the fill-mask pipeline's own numbers, computed in the model
 * worker) and the attention of the masked position in every layer and head, the row that chose them.
 */
import { mapsHeatmapPieces } from '../../../src/viz/attention-maps.ts';
import {
  encoderMaps,
  positionMaps,
  type EncoderAttention,
  type TokenRole,
} from '../../../src/viz/encoder-attention.ts';
import { field, h, nextFrame, onSubmit } from '../dom.ts';
import { figureBox, hideFigure, showFigureInPieces } from '../figures.ts';
import type { EncoderInfo } from '../model-worker.ts';
import { runner } from '../runner.ts';
import { attentionPanel } from './attention-panel.ts';
import { canvasCells, onCanvas } from './heatmap-canvas.ts';
import { neuronPanel } from './neuron.ts';

export interface EncoderPanel {
  /** What to append to the view. */
  elements: HTMLElement[];
  /** Use this encoder from now on (null: none; the panel hides). */
  use(info: EncoderInfo | null): void;
}

/** What the chips say of a token's role. */
const ROLE_TITLES: Record<TokenRole, string> = {
  text: 'a piece of the text',
  special: 'a special token the tokenizer adds or the text names',
  padding: 'padding (attention mask 0: no position attends to it)',
};

/** `root` is the view's section: its dataset counts the runs (`encoded`, `filled`), for tests. */
export function encoderPanel(root: HTMLElement): EncoderPanel {
  const text = h('input', {
    id: 'enc-text',
    'data-testid': 'enc-text',
    type: 'text',
    size: 48,
    value: 'A man in a blue shirt is riding a bike.',
    autocomplete: 'off',
    spellcheck: false,
  });
  const padTo = h('input', {
    id: 'enc-pad',
    'data-testid': 'enc-pad',
    type: 'number',
    min: 1,
    step: 1,
    value: '',
    title: 'pad the text to this many tokens, as a longer text of the same batch would (empty: no padding)',
  });
  const encode = h('button', { type: 'submit', id: 'encode', 'data-testid': 'encode', text: 'Show attention' });
  const encodeForm = h(
    'form',
    { id: 'encode-form', class: 'row' },
    field('Text', text),
    field('Pad to (tokens)', padTo),
    encode,
  );
  const masked = h('input', {
    id: 'fill-text',
    'data-testid': 'fill-text',
    type: 'text',
    size: 48,
    value: '',
    autocomplete: 'off',
    spellcheck: false,
  });
  const topK = h('input', { id: 'fill-k', 'data-testid': 'fill-k', type: 'number', min: 1, max: 50, value: 5 });
  const fill = h('button', { type: 'submit', id: 'fill-mask', 'data-testid': 'fill-mask', text: 'Fill the mask' });
  const fillForm = h(
    'form',
    { id: 'fill-form', class: 'row' },
    field('Text with the mask', masked),
    field('Top k', topK),
    fill,
  );
  const fillNote = h('p', { class: 'muted', id: 'fill-note' });
  const err = h('p', { class: 'error', id: 'encoder-error', role: 'alert', hidden: true });
  const results = h('table', {
    class: 'fill-results',
    id: 'fill-results',
    'data-testid': 'fill-results',
    hidden: true,
  });
  const tokens = h('div', { id: 'enc-tokens', class: 'tokens', 'data-testid': 'enc-tokens' });
  const figMask = figureBox('enc-mask-attention');
  // The head view starts with the chosen head: an encoder's every query sees every key, so all heads of a long
  // text are heads × T² lines (12 × 214² = 550 thousand for 120 words), which the page cannot keep drawing
  // within its frame budget; the box adds them.
  const panel = attentionPanel('Generate', 'enc-', [], { allHeads: false });
  const neuron = neuronPanel({
    prefix: 'enc-',
    bidirectional: true,
    ask: (_ids, layer, head, query) =>
      runner.call('encoderNeuron', { text: shown!.text, padTo: shown!.padTo, layer, head, query }),
  });
  const section = h(
    'section',
    { class: 'panel', id: 'encoder', hidden: true },
    h('h3', { text: 'Attention over a text' }),
    encodeForm,
    h('h3', { text: 'Fill-mask' }),
    fillNote,
    fillForm,
    err,
    results,
    tokens,
    figMask,
  );
  const elements = [section, ...panel.elements, neuron.element];
  for (const e of [...panel.elements, neuron.element]) e.hidden = true;

  let info: EncoderInfo | null = null;
  /** The text whose attention is on screen (the neuron view runs over it). */
  let shown: { text: string; padTo?: number } | null = null;

  const showTokens = (a: EncoderAttention, maskAt = -1) => {
    tokens.replaceChildren(
      h('span', { class: 'label', text: `tokens (${a.ids.length}): ` }),
      ...a.tokens.map((t, i) =>
        h('span', {
          class: `chip${a.roles[i] === 'text' ? '' : ` ${a.roles[i]}`}${i === maskAt ? ' mask' : ''}`,
          'data-role': a.roles[i],
          title: `${i + 1}: ${ROLE_TITLES[a.roles[i]]}`,
          text: t,
        }),
      ),
      h('span', {
        class: 'muted',
        text:
          ' special tokens in blue' +
          (a.roles.includes('padding') ? ', padding hatched (no position attends to it)' : '') +
          (maskAt >= 0 ? ', the mask outlined' : ''),
      }),
    );
  };

  /** The attention of a text on screen: tokens, the maps of every layer × head, the neuron view. */
  const showAttention = async (a: EncoderAttention, padTo: number | undefined, maskAt = -1) => {
    shown = { text: a.text, padTo };
    showTokens(a, maskAt);
    for (const e of panel.elements) e.hidden = false;
    await panel.show(encoderMaps(a));
    await neuron.show({ nLayer: info!.nLayer, nHead: info!.nHead }, a.ids, a.tokens);
  };

  const clear = () => {
    shown = null;
    tokens.replaceChildren();
    results.replaceChildren();
    results.hidden = true;
    hideFigure(figMask, 'enc-mask-attention');
    void panel.show(null);
    neuron.clear();
  };

  onSubmit(encodeForm, {
    button: encode,
    error: err,
    ready: () => info !== null,
    doing: 'running the encoder',
    cancel: () => runner.cancel(),
    start() {},
    async work() {
      const raw = padTo.value.trim();
      const pad = raw === '' ? undefined : Number(raw);
      if (pad !== undefined && (!Number.isInteger(pad) || pad < 1))
        throw new Error(`pad to must be a whole number >= 1 (or empty), got '${raw}'`);
      const a = await runner.call('encode', { text: text.value, padTo: pad });
      results.hidden = true;
      hideFigure(figMask, 'enc-mask-attention');
      await showAttention(a, pad);
      root.dataset.encoded = String(Number(root.dataset.encoded ?? 0) + 1);
    },
    fail: clear,
  });

  onSubmit(fillForm, {
    button: fill,
    error: err,
    ready: () => info !== null,
    doing: 'filling the mask',
    cancel: () => runner.cancel(),
    start() {},
    async work() {
      const k = Number(topK.value);
      if (!Number.isInteger(k) || k < 1) throw new Error(`top k must be a whole number >= 1, got '${topK.value}'`);
      const f = await runner.call('fillMask', { text: masked.value, topK: k });
      results.replaceChildren(
        h(
          'thead',
          {},
          h('tr', {}, ...['#', 'token', 'score', 'id', 'the text filled'].map((t) => h('th', { text: t }))),
        ),
        h(
          'tbody',
          {},
          ...f.results.map((r, i) =>
            h(
              'tr',
              { 'data-token': r.token, 'data-score': r.score },
              h('td', { text: String(i + 1) }),
              h('td', { class: 'tok', text: r.token_str }),
              h('td', { text: r.score.toFixed(4) }),
              h('td', { text: String(r.token) }),
              h('td', { text: r.sequence }),
            ),
          ),
        ),
      );
      results.hidden = false;
      // The text's maps first; the mask's map a frame later, so their first pieces are not drawn in one task.
      const attentionDrawn = showAttention(f.attention, undefined, f.maskAt);
      await nextFrame();
      const maps = positionMaps(f.attention, f.maskAt);
      const cells = mapsHeatmapPieces(maps, 0, 0);
      const maskDrawn = showFigureInPieces(
        figMask,
        {
          id: 'enc-mask-attention',
          view: 'Generate',
          title: `what ${f.maskToken} attends to (position ${f.maskAt + 1}), every layer × head: its row of each map`,
        },
        cells,
        undefined,
        onCanvas(cells) ? canvasCells(cells) : undefined,
      );
      await Promise.all([maskDrawn, attentionDrawn]);
      root.dataset.filled = String(Number(root.dataset.filled ?? 0) + 1);
    },
    fail: clear,
  });

  return {
    elements,
    use(next) {
      info = next;
      clear();
      err.hidden = true;
      section.hidden = next === null;
      if (!next) {
        for (const e of [...panel.elements, neuron.element]) e.hidden = true;
        return;
      }
      const canFill = next.head === 'masked-lm' && next.maskToken !== null;
      fill.disabled = !canFill;
      masked.disabled = !canFill;
      if (canFill && (masked.value === '' || !masked.value.includes(next.maskToken!)))
        masked.value = `A man in a ${next.maskToken} shirt is riding a bike.`;
      fillNote.textContent = canFill
        ? `Type a text holding ${next.maskToken} once: the model's top tokens for it, with their scores ` +
          "(pipeline('fill-mask')'s), and what the masked position attends to."
        : `This folder's model has no masked-LM head (head '${next.head}'): it cannot fill a mask. ` +
          'Its attention is shown above.';
    },
  };
}
