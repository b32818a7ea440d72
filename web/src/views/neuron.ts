/**
 * bertviz's neuron view for one head: pick a query token, see its query vector q, every earlier
 * token's key vector k, their elementwise product q ⊙ k (red negative, blue positive), the score
 * Σ(q ⊙ k)/√d and the softmax of the scores, which is the row of the attention heatmap. The
 * numbers come from the model worker.
 */
import { rdbu } from '../../../src/viz/color.ts';
import type { NeuronView } from '../../../src/viz/neuron.ts';
import { field, h, select, setOptions } from '../dom.ts';
import type { GptInfo } from '../model-worker.ts';
import { type Paced, paced } from '../paced.ts';
import { runner } from '../runner.ts';

/** Key rows of the table drawn in one piece. */
const ROWS_PER_PIECE = 16;

export interface NeuronPanel {
  element: HTMLElement;
  show(lm: Pick<GptInfo, 'nLayer' | 'nHead'>, ids: readonly number[], tokens: readonly string[]): Promise<void>;
  clear(): void;
}

/** A vector as a strip of colored cells (value on hover). */
function strip(v: readonly number[], scale: number, cls = 'strip'): HTMLElement {
  const el = h('span', { class: cls });
  for (const x of v) {
    const c = h('span', { class: 'cell', title: x.toFixed(4) });
    c.style.background = rdbu(0.5 + 0.5 * Math.max(-1, Math.min(1, x / scale)));
    el.append(c);
  }
  return el;
}

/** Where a neuron panel's numbers come from, and what its ids start with. */
export interface NeuronSource {
  /** Before every id of the panel ('' for the GPT's: neuron-layer, …; 'enc-' for the encoder's). */
  prefix: string;
  /** The view of a head for a query (default: the open GPT's, over the ids shown). */
  ask?(ids: readonly number[], layer: number, head: number, query: number): Promise<NeuronView>;
  /** Every key is seen (an encoder): the caption says so, and the query starts at the first token. */
  bidirectional?: boolean;
}

export function neuronPanel(source: NeuronSource = { prefix: '' }): NeuronPanel {
  const p = source.prefix;
  const ask = source.ask ?? ((ids, layer, head, query) => runner.call('neuron', { ids: [...ids], layer, head, query }));
  const layer = select(`${p}neuron-layer`, []);
  const head = select(`${p}neuron-head`, []);
  const query = select(`${p}neuron-query`, []);
  const caption = h('p', { class: 'muted', id: `${p}neuron-caption` });
  const out = h('div', { id: `${p}neuron-out`, 'data-testid': `${p}neuron-view` });
  const err = h('p', { class: 'error', role: 'alert', hidden: true });
  const element = h(
    'section',
    { class: 'panel', id: `${p}neuron`, hidden: true },
    h('h3', { text: 'Neuron view' }),
    h('div', { class: 'row controls' }, field('Layer', layer), field('Head', head), field('Query token', query)),
    caption,
    out,
    err,
  );
  let state: { ids: number[]; tokens: string[] } | null = null;
  /** The table's rows being drawn. */
  let rowsJob: Paced | null = null;
  /** Counts draws: an answer that comes after a newer draw was asked for is dropped. */
  let asked = 0;

  const draw = async () => {
    if (!state) return;
    const mine = ++asked;
    const now = state;
    let nv: NeuronView;
    try {
      nv = await ask(now.ids, Number(layer.value), Number(head.value), Number(query.value));
    } catch (e) {
      if (mine !== asked) return;
      err.textContent = (e as Error).message;
      err.hidden = false;
      return;
    }
    if (mine !== asked || state !== now) return;
    err.hidden = true;
    const toks = now.tokens;
    const big = (xs: number[][]) => Math.max(1e-6, ...xs.flat().map(Math.abs));
    const vScale = big([nv.q, ...nv.keys]);
    const pScale = big(nv.products);
    const row = (j: number) =>
      h(
        'tr',
        { 'data-key': j, 'data-score': nv.scores[j], 'data-weight': nv.weights[j] },
        h('td', { class: 'tok', text: toks[j] }),
        h('td', {}, strip(nv.keys[j], vScale)),
        h('td', {}, strip(nv.products[j], pScale)),
        h('td', { text: nv.scores[j].toFixed(3) }),
        h('td', { text: nv.weights[j].toFixed(3) }),
      );
    const body = h('tbody');
    out.replaceChildren(
      h(
        'p',
        {},
        h('span', { class: 'label', text: `q (query of "${toks[nv.query]}", ${nv.q.length} numbers): ` }),
        strip(nv.q, vScale),
      ),
      h(
        'table',
        { class: 'neuron' },
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            h('th', { text: 'key token' }),
            h('th', { text: 'k' }),
            h('th', { text: 'q ⊙ k' }),
            h('th', { text: `score = Σ(q ⊙ k) · ${nv.scale.toFixed(4)}` }),
            h('th', { text: 'softmax' }),
          ),
        ),
        body,
      ),
    );
    // A key's row is 2 × dK coloured cells: a long text's rows come ROWS_PER_PIECE at a time (paced.ts).
    rowsJob?.cancel();
    const n = nv.keys.length;
    const job = paced(
      Math.ceil(n / ROWS_PER_PIECE),
      (k) => {
        for (let j = k * ROWS_PER_PIECE; j < Math.min(n, (k + 1) * ROWS_PER_PIECE); j++) body.append(row(j));
      },
      () => {
        // What is drawn (the numbers come from the worker, after the selectors changed), once it all is.
        out.dataset.layer = String(nv.layer);
        out.dataset.head = String(nv.head);
        out.dataset.query = String(nv.query);
        caption.textContent =
          `Layer ${nv.layer + 1}, head ${nv.head + 1}, query "${toks[nv.query]}" ` +
          `(position ${nv.query + 1}): ` +
          (source.bidirectional
            ? 'it attends to every token but padding (whose score is −∞, its weight 0)'
            : `it attends to itself and the ${nv.query} token(s) before it`) +
          `; 1/√d = ${nv.scale.toFixed(4)}.`;
      },
    );
    rowsJob = job;
    await job.done;
  };
  for (const s of [layer, head, query]) s.addEventListener('change', () => void draw());

  return {
    element,
    show(c, ids, tokens) {
      state = { ids: ids.slice(), tokens: tokens.slice() };
      setOptions(
        layer,
        Array.from({ length: c.nLayer }, (_, i) => [String(i), `layer ${i + 1}`] as const),
      );
      setOptions(
        head,
        Array.from({ length: c.nHead }, (_, i) => [String(i), `head ${i + 1}`] as const),
      );
      setOptions(
        query,
        tokens.map((t, i) => [String(i), `${i + 1}: ${t}`] as const),
        false,
      );
      query.value = String(source.bidirectional ? 0 : tokens.length - 1);
      element.hidden = false;
      return draw();
    },
    clear() {
      rowsJob?.cancel();
      state = null;
      element.hidden = true;
    },
  };
}
