/**
 * Flow view: the whole model as a flow, as the Transformer Explainer draws GPT-2, on any served folder
 * (a translator, qkv's or Hugging Face Marian; a GPT, qkv's or Hugging Face GPT-2): one forward pass
 * over the sentence, stage by stage — token embedding, positions, then per layer the attention, the
 * residual sums, the layer norms and the feed-forward block, and the logits and softmax. A translator
 * shows two lanes, the encoder over the source and the decoder (fed the model's greedy translation, or
 * the decoder input typed) with its cross-attention. Each stage is a button (a tab stop) with a small
 * picture of its numbers; opening it shows them (flow-detail.ts). The model runs in the model worker
 * (`flow` and `flowVectors` requests): the page stays responsive and a long run can be cancelled. The
 * numbers are `qkv flow`'s for the same folder and sentence.
 */
import type { FlowOutline, FlowStage, FlowStageOutline, FlowText } from '../../../src/viz/flow.ts';
import { flowThumbColors } from '../../../src/viz/flow-svg.ts';
import { field, h, onSubmit } from '../dom.ts';
import { KIND_LABELS, NO_MODEL, type Served, type ServedEntry } from '../model.ts';
import { type Paced, paced } from '../paced.ts';
import { runner } from '../runner.ts';
import { renderDetail } from './flow-detail.ts';
import './flow.css';

/** Leading components the page keeps per vector (`qkv flow`'s default --dims). */
const DIMS = 16;
const TRANSLATOR_TEXT = 'A man is riding a bike.';
const GPT_TEXT = 'A man is riding a';

const isTranslator = (m: ServedEntry) => m.kind === 'seq2seq' || m.kind === 'marian';

/** The lanes of a flow: a translator's encoder and decoder, or a GPT's one stack. */
function lanes(flow: FlowOutline): { name: string; stages: FlowStageOutline[] }[] {
  if (flow.model === 'gpt') return [{ name: 'Decoder-only stack', stages: flow.stages }];
  if (flow.model === 'encoder') return [{ name: 'Encoder stack (every token sees every other)', stages: flow.stages }];
  return [
    { name: 'Encoder (source)', stages: flow.stages.filter((s) => s.axis === 'source') },
    { name: 'Decoder (target)', stages: flow.stages.filter((s) => s.axis !== 'source') },
  ];
}

/** Stages in order, grouped by their column (consecutive stages of one group). */
function columns(stages: readonly FlowStageOutline[]): { group: string; stages: FlowStageOutline[] }[] {
  const out: { group: string; stages: FlowStageOutline[] }[] = [];
  for (const s of stages) {
    const last = out.at(-1);
    if (last && last.group === s.group) last.stages.push(s);
    else out.push({ group: s.group, stages: [s] });
  }
  return out;
}

/** A stage's thumbnail painted on a canvas (one element, however many cells; decorative: the button is labelled). */
function thumbCanvas(stage: FlowStageOutline, w = 96, hgt = 40): HTMLCanvasElement {
  const c = h('canvas', { class: 'flow-thumb', width: w, height: hgt, 'aria-hidden': 'true' });
  const colors = flowThumbColors(stage);
  const ctx = c.getContext('2d');
  const rows = colors.length;
  const cols = colors[0]?.length ?? 0;
  if (!ctx || rows === 0 || cols === 0) return c;
  const cw = w / cols;
  const ch = hgt / rows;
  colors.forEach((r, i) => {
    r.forEach((fill, j) => {
      ctx.fillStyle = fill;
      ctx.fillRect(j * cw, i * ch, cw + 0.3, ch + 0.3);
    });
  });
  return c;
}

/** The shell quoting of a sentence for the command line shown under the flow. */
const quote = (s: string) => `'${s.replaceAll("'", "'\\''")}'`;

export function initFlow(root: HTMLElement, deps: { served: Served }): void {
  const models = deps.served.models.filter((m) => m.kind !== null);
  const first = models.find(isTranslator) ?? models[0] ?? null;
  const model = h('select', { id: 'flow-model', 'data-testid': 'flow-model' });
  for (const m of models)
    model.append(h('option', { value: m.id, text: `${m.name} · ${KIND_LABELS[m.kind!]}`, title: m.description }));
  if (first) model.value = first.id;
  const text = h('input', {
    id: 'flow-text',
    'data-testid': 'flow-text',
    type: 'text',
    size: 48,
    value: first && !isTranslator(first) ? GPT_TEXT : TRANSLATOR_TEXT,
    autocomplete: 'off',
    spellcheck: false,
  });
  const target = h('input', {
    id: 'flow-target',
    'data-testid': 'flow-target',
    type: 'text',
    size: 36,
    placeholder: "empty: the model's greedy translation",
    autocomplete: 'off',
    spellcheck: false,
  });
  const targetField = field('Decoder input (after the start token)', target);
  const go = h('button', { type: 'submit', id: 'flow-run', 'data-testid': 'flow-run', text: 'Run', disabled: !first });
  const form = h(
    'form',
    { class: 'row', id: 'flow-form' },
    field('Model', model),
    field('Sentence', text),
    targetField,
    go,
  );
  const err = h('p', { class: 'error', id: 'flow-error', role: 'alert', hidden: true });
  const summary = h('p', { id: 'flow-summary', 'data-testid': 'flow-summary', class: 'muted' });
  const lanesBox = h('div', { id: 'flow-lanes', 'data-testid': 'flow-lanes' });
  const detail = h('section', {
    id: 'flow-detail',
    class: 'panel flow-detail',
    'data-testid': 'flow-detail',
    'aria-labelledby': 'flow-detail-title',
    hidden: true,
  });
  root.append(
    h(
      'div',
      { class: 'panel' },
      h(
        'p',
        {
          text:
            'One forward pass of the model over the sentence, stage by stage: token embedding and positions, each ' +
            "layer's attention, residual sums, layer norms and feed-forward block, then the logits and the softmax. " +
            'Open a stage (click, or Tab and Enter) for its numbers; the same numbers, as JSON: ',
        },
        h('code', { text: 'qkv flow --model DIR "a sentence"' }),
      ),
      models.length === 0 ? h('p', { class: 'muted', text: NO_MODEL }) : form,
      err,
      summary,
    ),
    lanesBox,
    detail,
  );

  let flow: FlowOutline | null = null;
  /** Counts stage openings: a stage's numbers that come after another stage was opened are dropped. */
  let opening = 0;
  let open: HTMLButtonElement | null = null;
  let ran = false;
  /** The lanes being drawn, column by column. */
  let drawing: Paced | null = null;
  const entry = () => models.find((m) => m.id === model.value) ?? null;
  const showTarget = () => {
    targetField.hidden = !(entry() && isTranslator(entry()!));
  };
  showTarget();
  model.addEventListener('change', () => {
    const e = entry();
    // The other kind's example sentence becomes this kind's.
    if (e && text.value === (isTranslator(e) ? GPT_TEXT : TRANSLATOR_TEXT))
      text.value = isTranslator(e) ? TRANSLATOR_TEXT : GPT_TEXT;
    showTarget();
    form.requestSubmit();
  });

  const close = () => {
    opening++;
    open?.setAttribute('aria-expanded', 'false');
    open = null;
    detail.hidden = true;
    detail.replaceChildren();
  };

  const toggle = async (button: HTMLButtonElement, stage: FlowStageOutline) => {
    if (open === button) {
      close();
      return;
    }
    open?.setAttribute('aria-expanded', 'false');
    open = button;
    button.setAttribute('aria-expanded', 'true');
    const mine = ++opening;
    const shown = flow!;
    detail.hidden = false;
    detail.dataset.stage = '';
    detail.replaceChildren(
      h('p', { class: 'muted', role: 'status', text: `${stage.group} · ${stage.title}: reading…` }),
    );
    let full: FlowStage;
    try {
      full = await runner.call('flowStage', { stage: stage.id });
    } catch (e) {
      if (mine !== opening) return;
      detail.replaceChildren(h('p', { class: 'error', role: 'alert', text: (e as Error).message }));
      return;
    }
    if (mine !== opening || flow !== shown) return;
    detail.dataset.stage = stage.id;
    const heading = renderDetail(detail, shown, full, {
      vectors: (id) => runner.call('flowVectors', { stage: id }),
    });
    const back = h('button', { type: 'button', class: 'small', text: 'Back to the flow' });
    back.addEventListener('click', () => button.focus());
    detail.append(back);
    heading.focus();
  };

  const draw = (f: FlowOutline, t: FlowText, e: ServedEntry) => {
    flow = f;
    close();
    const args = [`qkv flow --model DIR ${quote(t.text)}`];
    if (t.translated === false && t.target !== undefined) args.push(`--target ${quote(t.target)}`);
    summary.replaceChildren(
      `${e.name}: ${f.stages.length} stages. `,
      t.target !== undefined
        ? `The decoder is fed “${t.target}”${t.translated ? ' (the model’s greedy translation)' : ''}. `
        : '',
      'The same numbers: ',
      h('code', { text: args.join(' ') }),
    );
    // The lanes' boxes at once, their columns in pieces (a 30-block decoder has hundreds of stages, each a
    // thumbnail): a few columns a frame, so the page keeps drawing (issue 63's paced drawing).
    drawing?.cancel();
    const pieces: { list: HTMLElement; col: { group: string; stages: FlowStageOutline[] } }[] = [];
    lanesBox.replaceChildren(
      ...lanes(f).map((lane) => {
        const list = h('div', { class: 'flow-lane', role: 'list' });
        for (const col of columns(lane.stages)) pieces.push({ list, col });
        return h('section', { class: 'flow-lane-box', 'aria-label': lane.name }, h('h3', { text: lane.name }), list);
      }),
    );
    drawing = paced(
      pieces.length,
      (k) => pieces[k].list.append(column(pieces[k].col)),
      () => {
        root.dataset.flowed = String(Number(root.dataset.flowed ?? 0) + 1);
      },
    );
  };

  /** One column of a lane: its group's stages, each a button with its thumbnail. */
  const column = (col: { group: string; stages: FlowStageOutline[] }) =>
    h(
      'div',
      { class: 'flow-col', role: 'listitem', 'data-group': col.group },
      h('h4', { text: col.group }),
      ...col.stages.map((s) => {
        const T = s.tokens;
        const b = h(
          'button',
          {
            type: 'button',
            class: `flow-stage kind-${s.kind}`,
            'data-stage': s.id,
            'aria-expanded': 'false',
            'aria-controls': 'flow-detail',
            'aria-label': `${col.group}, ${s.title}: ${T} × ${s.width}`,
          },
          h('span', { class: 'flow-stage-title', text: s.title }),
        );
        b.append(thumbCanvas(s), h('span', { class: 'flow-shape', text: `${T} × ${s.width}` }));
        b.addEventListener('click', () => void toggle(b, s));
        return b;
      }),
    );

  onSubmit(form, {
    button: go,
    error: err,
    doing: 'running the model',
    ready: () => entry() !== null,
    start() {
      ran = true;
    },
    async work() {
      const e = entry()!;
      const r = await runner.call(
        'flow',
        { entry: e, text: text.value, target: isTranslator(e) ? target.value : '', dims: DIMS },
        (line) => {
          summary.textContent = line;
        },
      );
      draw(r.outline, r.text, e);
    },
    fail() {
      flow = null;
      drawing?.cancel();
      close();
      lanesBox.replaceChildren();
      summary.textContent = '';
    },
    cancel: () => runner.cancel(),
  });

  // The first time the view is shown, it runs its first model on its example sentence.
  const firstShow = new MutationObserver(() => {
    if (root.hidden || ran || !first) return;
    firstShow.disconnect();
    form.requestSubmit();
  });
  firstShow.observe(root, { attributes: true, attributeFilter: ['hidden'] });
  if (!root.hidden && first) form.requestSubmit();
}
