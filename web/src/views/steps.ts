/**
 * Step-by-step view: scaled dot-product attention on the seeds' worked examples, every number on
 * screen and every input editable. Q, K, V → QKᵀ → ÷√dk → softmax → ·V; then the multi-head split
 * and concatenation, and what the causal mask does. The arithmetic is float64 (src/viz/steps.ts);
 * qkv's own F.attention (float32) is run on the same inputs as a check.
 */
import { F, tensor, noGrad } from '../../../src/index.ts';
import { heatmapSvg } from '../../../src/viz/heatmap.ts';
import { formatValue } from '../../../src/viz/svg.ts';
import {
  attentionSteps,
  headCounts,
  multiHeadSteps,
  WORKED_EXAMPLES,
  type AttentionSteps,
  type Matrix,
} from '../../../src/viz/steps.ts';
import { field, h, select } from '../dom.ts';
import { figureBox, showFigure } from '../figures.ts';

interface State {
  tokens: string[];
  q: Matrix;
  k: Matrix;
  v: Matrix;
}

const clone = (m: Matrix): Matrix => m.map((r) => r.slice());

function gcd(a: number, b: number): number {
  return b === 0 ? a : gcd(b, a % b);
}

/** A read-only matrix as a table; `tip(i, j)` explains how an entry was computed. */
function matrixTable(
  name: string,
  m: Matrix,
  rows: readonly string[],
  cols: readonly string[],
  digits: number,
  tip?: (i: number, j: number) => string,
): HTMLTableElement {
  const t = h('table', { class: 'matrix', 'data-matrix': name });
  t.append(h('caption', { text: name }));
  t.append(h('tr', {}, h('th', {}), ...cols.map((c) => h('th', { text: c }))));
  m.forEach((row, i) => {
    t.append(
      h(
        'tr',
        {},
        h('th', { text: rows[i] ?? String(i) }),
        ...row.map((v, j) =>
          h('td', {
            title: `${tip ? `${tip(i, j)} = ` : ''}${formatValue(v, 6)}`,
            class: v === -Infinity ? 'neg-inf' : '',
            text: formatValue(v, digits),
          }),
        ),
      ),
    );
  });
  return t;
}

export function initSteps(root: HTMLElement): void {
  const example = select(
    'example',
    [...WORKED_EXAMPLES.map((e) => [e.id, e.name] as const), ['custom', 'your own (edit the inputs)']],
    WORKED_EXAMPLES[0].id,
  );
  const digits = select(
    'digits',
    [
      ['2', '2'],
      ['3', '3'],
      ['4', '4'],
      ['6', '6'],
    ],
    '2',
  );
  const scale = h('input', { type: 'checkbox', id: 'scale', checked: true });
  const tokensIn = h('input', { type: 'text', id: 'tokens-input', size: 50 });
  const source = h('p', { class: 'muted', id: 'example-source' });
  const inputs = h('div', { class: 'matrices', id: 'inputs' });
  const sizeBtns = h(
    'div',
    { class: 'row no-export' },
    ...(
      [
        ['+ token', 'add-token'],
        ['− token', 'remove-token'],
        ['+ dk', 'add-dk'],
        ['− dk', 'remove-dk'],
        ['+ dv', 'add-dv'],
        ['− dv', 'remove-dv'],
      ] as const
    ).map(([t, a]) => h('button', { type: 'button', class: 'small', 'data-action': a, text: t })),
  );
  const err = h('p', { class: 'error', role: 'alert', hidden: true });
  const steps = h('div', { id: 'steps-output' });
  const heads = select('heads', []);
  const multi = h('div', { id: 'multihead' });
  const causal = h('div', { id: 'causal' });
  const figWeights = figureBox('steps-weights');

  root.append(
    h(
      'div',
      { class: 'panel' },
      h(
        'p',
        {},
        'Attention(Q, K, V) = softmax(QKᵀ / √dk) · V, one step at a time. ' +
          'Hover any number to see how it was computed; edit any input.',
      ),
      h('div', { class: 'row' }, field('Example', example), field('Decimals', digits), field('Scale by √dk', scale)),
      source,
      h('div', { class: 'row' }, field('Tokens', tokensIn)),
      sizeBtns,
      inputs,
      err,
    ),
    steps,
    figWeights,
    h('h2', { text: 'Multi-head attention: split, attend, concatenate' }),
    h(
      'p',
      {},
      'With h heads, each head gets dk/h columns of Q and K and dv/h of V ' +
        '(here the projections W_i^Q, W_i^K, W_i^V are identities, so the ' +
        "split is visible), attends on its own, and the heads' outputs are " +
        'concatenated: MultiHead(Q, K, V) = Concat(head_1, …, head_h)·Wᴼ.',
    ),
    h('div', { class: 'row' }, field('Heads h', heads)),
    multi,
    h('h2', { text: 'The causal mask' }),
    h(
      'p',
      {},
      'In the decoder a position may not look ahead: the scores of later ' +
        'keys are set to −∞ before the softmax, so their weights are exactly 0 ' +
        'and each output mixes only the values of its own and earlier tokens.',
    ),
    causal,
  );

  let state: State;

  const load = (id: string) => {
    const ex = WORKED_EXAMPLES.find((e) => e.id === id);
    if (!ex) return;
    state = { tokens: ex.tokens.slice(), q: clone(ex.q), k: clone(ex.k), v: clone(ex.v) };
    scale.checked = ex.scale;
    digits.value = String(ex.digits);
    source.textContent = ex.source;
    tokensIn.value = state.tokens.join(', ');
  };

  const editable = (name: 'q' | 'k' | 'v', label: string): HTMLTableElement => {
    const m = state[name];
    const t = h('table', { class: 'matrix editable', 'data-matrix': label });
    t.append(h('caption', { text: label }));
    t.append(h('tr', {}, h('th', {}), ...m[0].map((_, j) => h('th', { text: String(j) }))));
    m.forEach((row, i) => {
      t.append(
        h(
          'tr',
          {},
          h('th', { text: state.tokens[i] ?? String(i) }),
          ...row.map((v, j) => {
            const inp = h('input', {
              type: 'number',
              step: 'any',
              value: String(v),
              'data-m': name,
              'data-i': i,
              'data-j': j,
              'aria-label': `${label}[${i}][${j}]`,
            });
            return h('td', {}, inp);
          }),
        ),
      );
    });
    return t;
  };

  const drawInputs = () => {
    inputs.replaceChildren(editable('q', 'Q (queries)'), editable('k', 'K (keys)'), editable('v', 'V (values)'));
  };

  const tokenLabels = (n: number) => Array.from({ length: n }, (_, i) => state.tokens[i] ?? `t${i}`);

  const drawSteps = () => {
    err.hidden = true;
    const dg = Number(digits.value);
    let s: AttentionSteps;
    try {
      s = attentionSteps(state.q, state.k, state.v, { scale: scale.checked });
    } catch (e) {
      err.textContent = (e as Error).message;
      err.hidden = false;
      steps.replaceChildren();
      return;
    }
    const qs = tokenLabels(state.q.length);
    const ks = tokenLabels(state.k.length);
    const dims = (n: number) => Array.from({ length: n }, (_, j) => String(j));
    const dot = (a: number[], b: number[]) =>
      a.map((x, t) => `${formatValue(x, dg)}·${formatValue(b[t], dg)}`).join(' + ');
    const sq = Math.sqrt(s.dk);
    const scoresT = matrixTable('QKᵀ', s.scores, qs, ks, dg, (i, j) => dot(state.q[i], state.k[j]));
    const scaledT = matrixTable(
      scale.checked ? 'QKᵀ / √dk' : 'QKᵀ (not scaled)',
      s.scaled,
      qs,
      ks,
      dg,
      (i, j) => `${formatValue(s.scores[i][j], dg)} × ${formatValue(s.factor, 4)}`,
    );
    const weightsT = matrixTable('softmax (weights)', s.weights, qs, ks, dg, (i, j) => {
      const row = s.masked[i];
      const mx = Math.max(...row);
      const sum = row.reduce((p, x) => p + Math.exp(x - mx), 0);
      return (
        `exp(${formatValue(row[j], dg)}) / Σ exp(row) = ` +
        `${formatValue(Math.exp(row[j] - mx), 4)} / ${formatValue(sum, 4)}`
      );
    });
    const outT = matrixTable('output = weights · V', s.output, qs, dims(state.v[0].length), dg, (i, j) =>
      s.weights[i].map((w, t) => `${formatValue(w, dg)}·${formatValue(state.v[t][j], dg)}`).join(' + '),
    );
    // qkv's own F.attention on the same inputs (float32), as a check.
    let check = '';
    try {
      const r = noGrad(() =>
        F.attention(tensor(state.q), tensor(state.k), tensor(state.v), { needWeights: true, scale: s.factor }),
      );
      const o = r.output.tolist() as number[][];
      const diff = Math.max(...o.flatMap((row, i) => row.map((x, j) => Math.abs(x - s.output[i][j]))));
      check =
        `qkv's F.attention on the same inputs (float32) gives the same output: ` +
        `largest difference ${diff.toExponential(1)}.`;
    } catch (e) {
      check = `qkv's F.attention: ${(e as Error).message}`;
    }
    steps.replaceChildren(
      h('h2', { text: 'Step 1 · scores: QKᵀ' }),
      h(
        'p',
        {},
        'Each query is compared with each key by a dot product: entry (i, j) = q_i · k_j. Large means "similar".',
      ),
      h(
        'div',
        { class: 'matrices' },
        matrixTable('Q', state.q, qs, dims(s.dk), dg),
        matrixTable('Kᵀ', s.kt, dims(s.dk), ks, dg),
        scoresT,
      ),
      h('h2', { text: `Step 2 · scale by 1/√dk` }),
      h(
        'p',
        {},
        scale.checked
          ? `dk = ${s.dk}, √dk = ${formatValue(sq, 4)}: dividing keeps the scores' ` +
              `spread independent of dk, so the softmax does not saturate (§3.2.1).`
          : 'This example skips the scaling (the seed\'s simple self-attention); tick "Scale by √dk" to apply it.',
      ),
      h('div', { class: 'matrices' }, scaledT),
      h('h2', { text: 'Step 3 · softmax of each row' }),
      h('p', {}, 'Each row becomes positive weights that sum to 1: how much each query takes from each key.'),
      h('div', { class: 'matrices' }, weightsT),
      h('h2', { text: 'Step 4 · weighted sum of the values: weights · V' }),
      h('p', {}, 'Each output row mixes the rows of V with the weights of its query.'),
      h('div', { class: 'matrices' }, matrixTable('V', state.v, ks, dims(state.v[0].length), dg), outT),
      h(
        'p',
        { class: 'summary', id: 'steps-summary' },
        ...s.output.map((row, i) =>
          h('span', { class: 'chip', text: `${qs[i]} → [${row.map((x) => formatValue(x, dg)).join(', ')}]` }),
        ),
      ),
      h('p', { class: 'muted', id: 'steps-check', text: check }),
    );
    showFigure(figWeights, {
      id: 'steps-weights',
      view: 'Step by step',
      title: 'attention weights softmax(QKᵀ/√dk)',
      svg: heatmapSvg({
        values: s.weights,
        rowLabels: qs,
        colLabels: ks,
        min: 0,
        max: 1,
        digits: dg,
        title: 'attention weights',
        xLabel: 'key',
        yLabel: 'query',
        cellSize: Math.max(28, Math.min(48, Math.floor(360 / ks.length))),
      }),
    });
  };

  const drawMulti = () => {
    const dg = Number(digits.value);
    const dk = state.q[0]?.length ?? 0;
    const dv = state.v[0]?.length ?? 0;
    const g = dk > 0 && dv > 0 ? gcd(dk, dv) : 1;
    const opts = headCounts(g).map((n) => [String(n), String(n)] as const);
    const prev = heads.value;
    heads.replaceChildren(...opts.map(([v, t]) => h('option', { value: v, text: t })));
    heads.value = opts.some(([v]) => v === prev) ? prev : opts[opts.length - 1][0];
    const nh = Number(heads.value);
    multi.replaceChildren();
    causal.replaceChildren();
    let mh: ReturnType<typeof multiHeadSteps>;
    try {
      mh = multiHeadSteps(state.q, state.k, state.v, nh, { scale: scale.checked });
    } catch (e) {
      multi.append(h('p', { class: 'error', role: 'alert', text: (e as Error).message }));
      return;
    }
    const qs = tokenLabels(state.q.length);
    const ks = tokenLabels(state.k.length);
    const cols = (from: number, n: number) => Array.from({ length: n }, (_, j) => String(from + j));
    const span = (from: number, n: number) => (n === 1 ? `column ${from}` : `columns ${from}–${from + n - 1}`);
    mh.heads.forEach((s, i) => {
      const wq = dk / nh;
      const wv = dv / nh;
      multi.append(
        h(
          'div',
          { class: 'head-block' },
          h('h3', { text: `head ${i + 1}: ${span(i * wq, wq)} of Q and K, ${span(i * wv, wv)} of V, dk = ${s.dk}` }),
          h(
            'div',
            { class: 'matrices' },
            matrixTable(`Q${i + 1}`, s.q, qs, cols(i * wq, wq), dg),
            matrixTable(`K${i + 1}`, s.k, ks, cols(i * wq, wq), dg),
            matrixTable(`V${i + 1}`, s.v, ks, cols(i * wv, wv), dg),
            matrixTable(`weights${i + 1}`, s.weights, qs, ks, dg),
            matrixTable(`head${i + 1}`, s.output, qs, cols(i * wv, wv), dg),
          ),
        ),
      );
    });
    multi.append(
      h('div', { class: 'matrices' }, matrixTable('Concat(head_1, …, head_h)', mh.concat, qs, cols(0, dv), dg)),
    );
    if (nh === 1) multi.append(h('p', { class: 'muted', text: 'With one head this is the single-head result above.' }));

    if (state.q.length !== state.k.length) {
      causal.append(h('p', { class: 'muted', text: 'The causal mask needs as many queries as keys.' }));
      return;
    }
    const c = attentionSteps(state.q, state.k, state.v, { scale: scale.checked, causal: true });
    causal.append(
      h(
        'div',
        { class: 'matrices' },
        matrixTable('scores with the mask (−∞ above the diagonal)', c.masked, qs, ks, dg),
        matrixTable('masked softmax (weights)', c.weights, qs, ks, dg),
        matrixTable('output = weights · V', c.output, qs, cols(0, dv), dg),
      ),
    );
    causal.append(
      h('p', {
        class: 'muted',
        text:
          `The first token can only attend to itself, so its output is its own ` +
          `value row: [${c.output[0].map((x) => formatValue(x, dg)).join(', ')}].`,
      }),
    );
  };

  const redraw = () => {
    drawSteps();
    drawMulti();
  };

  example.addEventListener('change', () => {
    if (example.value !== 'custom') {
      load(example.value);
      drawInputs();
    }
    redraw();
  });
  digits.addEventListener('change', redraw);
  scale.addEventListener('change', redraw);
  heads.addEventListener('change', drawMulti);
  tokensIn.addEventListener('input', () => {
    // Tokens are words: separated by spaces, commas or both.
    state.tokens = tokensIn.value.split(/[\s,]+/).filter(Boolean);
    drawInputs();
    redraw();
  });
  inputs.addEventListener('input', (e) => {
    const inp = e.target as HTMLInputElement;
    if (!inp.dataset.m) return;
    const v = Number(inp.value);
    const ok = inp.value.trim() !== '' && Number.isFinite(v);
    inp.classList.toggle('invalid', !ok);
    if (!ok) return;
    state[inp.dataset.m as 'q' | 'k' | 'v'][Number(inp.dataset.i)][Number(inp.dataset.j)] = v;
    example.value = 'custom';
    redraw();
  });
  sizeBtns.addEventListener('click', (e) => {
    const a = (e.target as HTMLElement).dataset.action;
    if (!a) return;
    const n = state.q.length;
    const dk = state.q[0].length;
    const dv = state.v[0].length;
    if (a === 'add-token' && n < 12) {
      state.q.push(new Array(dk).fill(0));
      state.k.push(new Array(dk).fill(0));
      state.v.push(new Array(dv).fill(0));
      state.tokens.push(`t${n}`);
    } else if (a === 'remove-token' && n > 1) {
      state.q.pop();
      state.k.pop();
      state.v.pop();
      state.tokens.length = Math.min(state.tokens.length, n - 1);
    } else if (a === 'add-dk' && dk < 12) {
      for (const r of [...state.q, ...state.k]) r.push(0);
    } else if (a === 'remove-dk' && dk > 1) {
      for (const r of [...state.q, ...state.k]) r.pop();
    } else if (a === 'add-dv' && dv < 12) {
      for (const r of state.v) r.push(0);
    } else if (a === 'remove-dv' && dv > 1) {
      for (const r of state.v) r.pop();
    } else {
      return;
    }
    tokensIn.value = state.tokens.join(', ');
    example.value = 'custom';
    drawInputs();
    redraw();
  });

  load(WORKED_EXAMPLES[0].id);
  drawInputs();
  redraw();
}
