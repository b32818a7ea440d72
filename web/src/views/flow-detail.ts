/**
 * The Flow view's expanded stage: its numbers. Every stage: a heatmap strip of each token's vector
 * and a table of each token's norm, mean, std, min, max and leading components, all of a vector's
 * components on demand (from the model worker); an attention stage also each head's map (the
 * attention heatmap) and its queries', keys', values' and outputs' norms; the logits and the softmax
 * each position's most probable next tokens. Each number's cell holds its exact value in
 * `data-value` (what `qkv flow` prints), its text rounded to 4 significant digits.
 */
import type { FlowHead, FlowRow, FlowStage } from '../../../src/viz/flow.ts';
import type { FlowAxes } from '../../../src/viz/flow-svg.ts';
import { flowHeadSvg, flowVectorsSvg, stageTokens } from '../../../src/viz/flow-svg.ts';
import { field, h, select } from '../dom.ts';
import { figureBox, keyboardCells, showFigure } from '../figures.ts';

/** A number as the tables print it: 4 significant digits (the exact value is the cell's data-value). */
export function fmt(v: number): string {
  if (!Number.isFinite(v)) return String(v);
  if (v === 0) return '0';
  const a = Math.abs(v);
  return a >= 1e5 || a < 1e-3 ? v.toExponential(3) : String(Number(v.toPrecision(4)));
}

/** A table cell holding one number. */
function num(v: number, key: string): HTMLTableCellElement {
  return h('td', { class: 'num', 'data-key': key, 'data-value': String(v), text: fmt(v) });
}

const STATS = ['norm', 'mean', 'std', 'min', 'max'] as const;
const STAT_HEADS: Record<(typeof STATS)[number], string> = {
  norm: '‖x‖',
  mean: 'mean',
  std: 'std',
  min: 'min',
  max: 'max',
};

/** Per token: its summary and leading components (`dims` of them: all of `row.head` by default). */
function rowsTable(
  testid: string,
  caption: string,
  tokens: readonly string[],
  rows: readonly FlowRow[],
  stats: readonly (typeof STATS)[number][] = STATS,
  dims = rows[0]?.head.length ?? 0,
): HTMLTableElement {
  const t = h('table', { class: 'flow-numbers', 'data-testid': testid }, h('caption', { text: caption }));
  t.append(
    h(
      'tr',
      {},
      h('th', { scope: 'col', text: 'token' }),
      ...stats.map((s) => h('th', { scope: 'col', text: STAT_HEADS[s] })),
      ...Array.from({ length: dims }, (_, j) => h('th', { scope: 'col', class: 'num', text: `x[${j}]` })),
    ),
  );
  rows.forEach((r, i) => {
    t.append(
      h(
        'tr',
        { 'data-token': i },
        h('th', { scope: 'row', class: 'tok', text: tokens[i] ?? String(i) }),
        ...stats.map((s) => num(r[s], s)),
        ...r.head.slice(0, dims).map((v, j) => num(v, String(j))),
      ),
    );
  });
  return t;
}

/** A wide table in a box that scrolls sideways. */
const scroll = (t: HTMLElement) => h('div', { class: 'flow-scroll' }, t);

/** Every component of every token, [token][component]. */
export function fullTable(tokens: readonly string[], values: readonly (readonly number[])[]): HTMLElement {
  const t = h('table', { class: 'flow-numbers', 'data-testid': 'flow-full' });
  const width = values[0]?.length ?? 0;
  t.append(
    h(
      'tr',
      {},
      h('th', { scope: 'col', text: 'token' }),
      ...Array.from({ length: width }, (_, j) => h('th', { scope: 'col', class: 'num', text: String(j) })),
    ),
  );
  values.forEach((row, i) => {
    t.append(
      h(
        'tr',
        { 'data-token': i },
        h('th', { scope: 'row', class: 'tok', text: tokens[i] ?? String(i) }),
        ...row.map((v, j) => num(v, String(j))),
      ),
    );
  });
  return scroll(t);
}

/** One head's queries (‖q‖, ‖output‖) and keys (‖k‖, ‖v‖), with their leading components. */
function headTables(flow: FlowAxes, stage: FlowStage, head: FlowHead, n: number): HTMLElement {
  const queries = stageTokens(flow, stage);
  const keys = flow.axes[stage.keys!]?.tokens ?? [];
  const pair = (
    testid: string,
    caption: string,
    tokens: readonly string[],
    a: [string, readonly FlowRow[]],
    b: [string, readonly FlowRow[]],
  ) => {
    const t = h('table', { class: 'flow-numbers', 'data-testid': testid }, h('caption', { text: caption }));
    t.append(
      h(
        'tr',
        {},
        h('th', { scope: 'col', text: 'token' }),
        h('th', { scope: 'col', text: `‖${a[0]}‖` }),
        h('th', { scope: 'col', text: `‖${b[0]}‖` }),
        h('th', { scope: 'col', text: `${a[0]}: leading components` }),
      ),
    );
    tokens.forEach((tok, i) => {
      const strip = h('td', { class: 'flow-head-dims' });
      strip.append(
        ...a[1][i].head.map((v, j) => h('span', { 'data-key': `${a[0]}.${j}`, 'data-value': String(v), text: fmt(v) })),
      );
      t.append(
        h(
          'tr',
          { 'data-token': i },
          h('th', { scope: 'row', class: 'tok', text: tok }),
          num(a[1][i].norm, `${a[0]}.norm`),
          num(b[1][i].norm, `${b[0]}.norm`),
          strip,
        ),
      );
    });
    return t;
  };
  const kv =
    head.kvHead === undefined
      ? `head ${n + 1}: keys and values`
      : `KV head ${head.kvHead + 1}, shared by ${groupOf(stage, head.kvHead)}: keys and values`;
  return h(
    'div',
    { class: 'flow-heads' },
    pair(
      'flow-head-queries',
      `head ${n + 1}: queries and the head's output (weights · V)`,
      queries,
      ['q', head.q],
      ['out', head.out],
    ),
    pair('flow-head-keys', kv, keys, ['k', head.k], ['v', head.v]),
  );
}

/** The query heads that read KV head `kv` of a grouped-query stage: 'heads 3–4'. */
function groupOf(stage: FlowStage, kv: number): string {
  const g = stage.heads!.length / stage.kvHeads!;
  return g === 1 ? `head ${kv + 1}` : `heads ${kv * g + 1}–${(kv + 1) * g}`;
}

/** A head's name in the selector: with grouped-query attention, the KV head its group shares. */
function headName(head: FlowHead, i: number): string {
  return head.kvHead === undefined ? `head ${i + 1}` : `head ${i + 1} · KV ${head.kvHead + 1}`;
}

/** What a grouped-query stage's heads share: 'Grouped-query attention: …; heads 1–2 share KV head 1, …'. */
function sharing(stage: FlowStage): string {
  const kv = stage.kvHeads!;
  const groups = Array.from({ length: kv }, (_, k) => `${groupOf(stage, k)} share KV head ${k + 1}`);
  return (
    `Grouped-query attention: ${stage.heads!.length} query heads, ${kv} key/value heads; ${groups.join(', ')} ` +
    '(the same keys and values, one copy).'
  );
}

/** Each position's most probable next tokens, with their logits and probabilities. */
function topTable(flow: FlowAxes, stage: FlowStage): HTMLTableElement {
  const tokens = stageTokens(flow, stage);
  const k = stage.top![0]?.length ?? 0;
  const t = h(
    'table',
    { class: 'flow-numbers flow-top', 'data-testid': 'flow-top' },
    h('caption', { text: 'the most probable next tokens at each position: logit, probability' }),
  );
  t.append(
    h(
      'tr',
      {},
      h('th', { scope: 'col', text: 'position' }),
      ...Array.from({ length: k }, (_, r) => h('th', { scope: 'col', text: `#${r + 1}` })),
    ),
  );
  stage.top!.forEach((row, i) => {
    t.append(
      h(
        'tr',
        { 'data-token': i },
        h('th', { scope: 'row', class: 'tok', text: tokens[i] }),
        ...row.map((x, r) =>
          h(
            'td',
            { 'data-rank': r, 'data-id': x.id },
            h('span', { class: 'tok', text: x.token }),
            ' ',
            h('span', { 'data-key': 'logit', 'data-value': String(x.logit), text: fmt(x.logit) }),
            ' · ',
            h('span', { 'data-key': 'p', 'data-value': String(x.p), text: `p ${fmt(x.p)}` }),
          ),
        ),
      ),
    );
  });
  return t;
}

/** What the detail needs from the view: the full vectors of a stage, from the model worker. */
export interface DetailDeps {
  vectors(stage: string): Promise<number[][]>;
}

/** Fill `root` with the numbers of `stage` (see the file comment). */
export function renderDetail(root: HTMLElement, flow: FlowAxes, stage: FlowStage, deps: DetailDeps): HTMLElement {
  const tokens = stageTokens(flow, stage);
  const heading = h('h3', { id: 'flow-detail-title', tabindex: -1, text: `${stage.group} · ${stage.title}` });
  const figVectors = figureBox('flow-vectors');
  const full = h('button', {
    type: 'button',
    class: 'small',
    'data-testid': 'flow-full-button',
    text: `All ${stage.width} components`,
    hidden: stage.rows[0]?.head.length === stage.width,
  });
  const fullBox = h('div', { class: 'flow-full' });
  const err = h('p', { class: 'error', role: 'alert', hidden: true });
  const parts: HTMLElement[] = [
    heading,
    h(
      'p',
      {},
      h('code', { text: stage.formula }),
      ` · ${tokens.length} tokens × ${stage.width} · stage `,
      h('code', { text: stage.id }),
    ),
  ];
  if (stage.heads) {
    const headSel = select('flow-head-select', [
      ['mean', 'mean of heads'],
      ...stage.heads.map((hd, i) => [String(i), headName(hd, i)] as const),
    ]);
    headSel.value = '0';
    const figHead = figureBox('flow-head');
    const tables = h('div', {});
    const drawHead = () => {
      const hd = headSel.value === 'mean' ? 'mean' : Number(headSel.value);
      showFigure(figHead, {
        id: 'flow-head',
        view: 'Flow',
        title: `${stage.group} · ${stage.title} · ${hd === 'mean' ? 'mean of heads' : headName(stage.heads![hd], hd)}`,
        svg: flowHeadSvg(flow, stage, hd),
      });
      keyboardCells(figHead);
      tables.replaceChildren(
        hd === 'mean'
          ? h('p', { class: 'muted', text: 'Pick a head for its vectors.' })
          : headTables(flow, stage, stage.heads![hd], hd),
      );
    };
    headSel.addEventListener('change', drawHead);
    if (stage.kvHeads !== undefined)
      parts.push(h('p', { class: 'muted', 'data-testid': 'flow-kv-sharing', text: sharing(stage) }));
    parts.push(h('div', { class: 'row controls' }, field('Head', headSel)), figHead, tables);
    queueMicrotask(drawHead);
  }
  if (stage.top) parts.push(topTable(flow, stage));
  parts.push(
    h('h4', { text: 'The vectors' }),
    figVectors,
    scroll(
      rowsTable(
        'flow-rows',
        `each token's vector: its norm, mean, std, min, max and first ${stage.rows[0]?.head.length ?? 0} components`,
        tokens,
        stage.rows,
      ),
    ),
    h('div', { class: 'row' }, full),
    err,
    fullBox,
  );
  root.replaceChildren(...parts);
  const drawVectors = (values?: number[][]) => {
    showFigure(figVectors, {
      id: 'flow-vectors',
      view: 'Flow',
      title: `${stage.group} · ${stage.title}: ${values ? 'every component' : 'leading components'}`,
      svg: flowVectorsSvg(flow, stage, values),
    });
    keyboardCells(figVectors);
  };
  drawVectors();
  full.addEventListener('click', async () => {
    full.disabled = true;
    err.hidden = true;
    try {
      const values = await deps.vectors(stage.id);
      drawVectors(values);
      fullBox.replaceChildren(fullTable(tokens, values));
      full.hidden = true;
    } catch (e) {
      err.textContent = (e as Error).message;
      err.hidden = false;
    } finally {
      full.disabled = false;
    }
  });
  return heading;
}
