/**
 * The next-token view (as Transformer Explainer shows it): after the prompt, the model's
 * distribution over the whole vocabulary for the next token, its 20 most probable tokens with
 * their probabilities (after temperature, top-k and top-p, beside the plain softmax), the mass
 * they hold, and the token a seeded draw picks. Live: it follows the sampling controls without
 * running the model again (the model worker keeps the logits and draws from them).
 */
import type { SamplingOptions } from '../../../src/decode/sample.ts';
import { h } from '../dom.ts';
import { runner } from '../runner.ts';

export interface NextTokenPanel {
  element: HTMLElement;
  /** Run the model over `ids` (the prompt as fed) and show the next token's distribution. */
  show(ids: readonly number[]): Promise<void>;
  /** Redraw for new sampling settings (no model run). */
  update(): Promise<void>;
  clear(): void;
}

const pct = (p: number) => `${(100 * p).toFixed(2)}%`;

export function nextTokenPanel(options: () => SamplingOptions & { seed: number; greedy?: boolean }): NextTokenPanel {
  const caption = h('p', { class: 'muted', id: 'next-token-caption' });
  const body = h('tbody');
  const table = h(
    'table',
    { class: 'next-token', id: 'next-token-table', 'data-testid': 'next-token-table' },
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        h('th', { text: '#' }),
        h('th', { text: 'token' }),
        h('th', { text: 'id' }),
        h('th', { text: 'probability' }),
        h('th', { text: '' }),
        h('th', { text: 'softmax (T = 1)' }),
      ),
    ),
    body,
  );
  const mass = h('p', { id: 'next-token-mass', 'data-testid': 'next-token-mass' });
  const sampled = h('p', { id: 'next-token-sampled', 'data-testid': 'next-token-sampled' });
  const err = h('p', { class: 'error', role: 'alert', hidden: true });
  const element = h(
    'section',
    { class: 'panel', id: 'next-token', hidden: true },
    h('h3', { text: 'Next token' }),
    caption,
    table,
    mass,
    sampled,
    err,
  );
  let state: { ids: number[] } | null = null;
  /** Counts redraws: an answer that comes after a newer redraw was asked for is dropped. */
  let asked = 0;

  const update = async () => {
    if (!state) return;
    const { ids } = state;
    const mine = ++asked;
    let answer: Awaited<ReturnType<typeof runner.call<'nextTokenView'>>>;
    try {
      answer = await runner.call('nextTokenView', { options: options() });
    } catch (e) {
      if (mine !== asked) return;
      err.textContent = (e as Error).message;
      err.hidden = false;
      return;
    }
    if (mine !== asked || !state) return;
    err.hidden = true;
    const { view: v, labels, vocabSize } = answer;
    const label = (id: number) => labels[id] ?? String(id);
    body.replaceChildren(
      ...v.top.map((t, i) => {
        const bar = h('span', { class: 'bar' });
        bar.style.width = `${(100 * t.p).toFixed(1)}%`;
        return h(
          'tr',
          { 'data-id': t.id, 'data-p': t.p, 'data-p0': t.p0, class: t.id === v.sampled ? 'sampled' : undefined },
          h('td', { text: String(i + 1) }),
          h('td', { class: 'tok', text: label(t.id) }),
          h('td', { text: String(t.id) }),
          h('td', { text: pct(t.p) }),
          h('td', { class: 'barcell' }, bar),
          h('td', { class: 'muted', text: pct(t.p0) }),
        );
      }),
    );
    mass.dataset.mass = String(v.shownMass);
    mass.dataset.kept = String(v.kept);
    mass.textContent =
      `These ${v.top.length} tokens hold ${pct(v.shownMass)} of the ` +
      `probability; ${v.kept.toLocaleString('en')} of ` +
      `${vocabSize.toLocaleString('en')} tokens can be drawn.`;
    sampled.dataset.id = String(v.sampled);
    const o = options();
    const how =
      o.greedy || o.temperature === 0 ? 'Greedy decoding picks the most probable' : `A draw with seed ${o.seed} picks`;
    sampled.textContent = `${how} "${label(v.sampled)}" (id ${v.sampled}, ${pct(v.sampledP)}).`;
    caption.textContent =
      `What the model predicts after the ${ids.length} tokens of the prompt, for the first token it generates` +
      ` (temperature ` +
      `${o.temperature ?? 1}${o.topK ? `, top-k ${o.topK}` : ''}` +
      `${o.topP !== undefined && o.topP < 1 ? `, top-p ${o.topP}` : ''}).`;
  };

  return {
    element,
    async show(ids) {
      state = null;
      await runner.call('nextToken', { ids: ids.slice() });
      state = { ids: ids.slice() };
      element.hidden = false;
      await update();
    },
    update,
    clear() {
      state = null;
      element.hidden = true;
    },
  };
}
