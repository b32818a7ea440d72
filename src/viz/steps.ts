/**
 * Scaled dot-product attention one step at a time, in float64, for the step-by-step view:
 * Q, K, V → QKᵀ → ÷√dk → (mask) → softmax → ·V, then the multi-head split and concatenation.
 * Plain arrays, no tensors: every intermediate is kept so a page can print every number.
 */

export type Matrix = number[][];

function shape(m: Matrix, what: string): [number, number] {
  if (!Array.isArray(m) || m.length === 0 || !Array.isArray(m[0]) || m[0].length === 0)
    throw new Error(`${what} must be a non-empty matrix`);
  const c = m[0].length;
  m.forEach((row, i) => {
    if (row.length !== c) throw new Error(`${what}: row ${i} has ${row.length} values, row 0 has ${c}`);
    row.forEach((v, j) => {
      if (typeof v !== 'number' || Number.isNaN(v)) throw new Error(`${what}: entry (${i}, ${j}) is not a number`);
    });
  });
  return [m.length, c];
}

/** Aᵀ: rows become columns. */
export function transpose(a: Matrix): Matrix {
  return a[0].map((_, j) => a.map((row) => row[j]));
}

/** A · B for an (n × k) and a (k × m) matrix; throws if the inner sizes differ. */
export function matmul(a: Matrix, b: Matrix): Matrix {
  const [n, k] = shape(a, 'matmul: left');
  const [k2, m] = shape(b, 'matmul: right');
  if (k !== k2) throw new Error(`matmul: inner sizes differ (${n}×${k} · ${k2}×${m})`);
  return a.map((row) => Array.from({ length: m }, (_, j) => row.reduce((s, x, t) => s + x * b[t][j], 0)));
}

/** Row-wise softmax; −∞ entries get weight 0 (a row of only −∞ gives NaN, as PyTorch). */
export function softmaxRows(a: Matrix): Matrix {
  return a.map((row) => {
    const mx = Math.max(...row);
    const e = row.map((x) => Math.exp(x - mx));
    const s = e.reduce((p, x) => p + x, 0);
    return e.map((x) => x / s);
  });
}

/** Options of {@link attentionSteps} and {@link multiHeadSteps}. */
export interface AttentionStepsOptions {
  /** Divide the scores by √dk (default true; seed 002's simple self-attention does not). */
  scale?: boolean;
  /** Causal mask: query i sees keys 0..i only (needs as many queries as keys). */
  causal?: boolean;
}

/** Every intermediate of softmax(QKᵀ/√dk)·V (§3.2.1), in order, for one head. */
export interface AttentionSteps {
  /** The queries (queries × dk), as given. */
  q: Matrix;
  /** The keys (keys × dk), as given. */
  k: Matrix;
  /** The values (keys × dv), as given. */
  v: Matrix;
  /** Kᵀ (dk × keys). */
  kt: Matrix;
  /** QKᵀ (queries × keys). */
  scores: Matrix;
  /** Width of a query and a key (Q's columns). */
  dk: number;
  /** The factor applied: 1/√dk, or 1 without scaling. */
  factor: number;
  /** QKᵀ · factor. */
  scaled: Matrix;
  /** Which entries the causal mask blocks (null without it). */
  mask: boolean[][] | null;
  /** The scaled scores with blocked entries set to −∞ (= scaled without a mask). */
  masked: Matrix;
  /** softmax of each row: the attention weights. */
  weights: Matrix;
  /** weights · V. */
  output: Matrix;
}

/**
 * Scaled dot-product attention (§3.2.1) step by step, in float64. Throws if Q and K differ in
 * width, K and V in rows, or (causal) the queries and keys in number.
 */
export function attentionSteps(q: Matrix, k: Matrix, v: Matrix, options: AttentionStepsOptions = {}): AttentionSteps {
  const [nq, dk] = shape(q, 'Q');
  const [nk, dk2] = shape(k, 'K');
  const [nv] = shape(v, 'V');
  if (dk !== dk2) throw new Error(`attention: Q has ${dk} columns, K has ${dk2}; they must match (dk)`);
  if (nv !== nk) throw new Error(`attention: K has ${nk} rows, V has ${nv}; they must match (one value per key)`);
  const causal = options.causal ?? false;
  if (causal && nq !== nk)
    throw new Error(`attention: the causal mask needs as many queries as keys, got ${nq} and ${nk}`);
  const kt = transpose(k);
  const scores = matmul(q, kt);
  const factor = (options.scale ?? true) ? 1 / Math.sqrt(dk) : 1;
  const scaled = scores.map((row) => row.map((x) => x * factor));
  const mask = causal ? scores.map((row, i) => row.map((_, j) => j > i)) : null;
  const masked = mask ? scaled.map((row, i) => row.map((x, j) => (mask[i][j] ? -Infinity : x))) : scaled;
  const weights = softmaxRows(masked);
  return { q, k, v, kt, scores, dk, factor, scaled, mask, masked, weights, output: matmul(weights, v) };
}

/** Columns [h·d/h, (h+1)·d/h) of m for each head h: the split of §3.2.2 (with identity projections). */
export function splitHeads(m: Matrix, heads: number): Matrix[] {
  const [, d] = shape(m, 'splitHeads');
  if (!Number.isInteger(heads) || heads < 1 || d % heads !== 0)
    throw new Error(`splitHeads: ${d} columns do not split into ${heads} heads`);
  const w = d / heads;
  return Array.from({ length: heads }, (_, h) => m.map((row) => row.slice(h * w, (h + 1) * w)));
}

/** The heads' outputs side by side: Concat(head_1, …, head_h). */
export function concatHeads(parts: Matrix[]): Matrix {
  if (parts.length === 0) throw new Error('concatHeads: no heads');
  const n = parts[0].length;
  parts.forEach((p, i) => {
    if (p.length !== n) throw new Error(`concatHeads: head ${i} has ${p.length} rows, head 0 has ${n}`);
  });
  return parts[0].map((_, i) => parts.flatMap((p) => p[i]));
}

/** Multi-head attention (§3.2.2) with identity projections, step by step. */
export interface MultiHeadSteps {
  /** Each head's steps, on its slice of the columns. */
  heads: AttentionSteps[];
  /** Concat(head_1, …, head_h), before the output projection Wᴼ. */
  concat: Matrix;
}

/** Multi-head attention with identity projections: split Q, K, V by columns, attend per head, concatenate. */
export function multiHeadSteps(
  q: Matrix,
  k: Matrix,
  v: Matrix,
  heads: number,
  options: AttentionStepsOptions = {},
): MultiHeadSteps {
  const qs = splitHeads(q, heads);
  const ks = splitHeads(k, heads);
  const vs = splitHeads(v, heads);
  const steps = qs.map((qh, h) => attentionSteps(qh, ks[h], vs[h], options));
  return { heads: steps, concat: concatHeads(steps.map((s) => s.output)) };
}

/** The divisors of d: the head counts that split d columns evenly. */
export function headCounts(d: number): number[] {
  return Array.from({ length: d }, (_, i) => i + 1).filter((h) => d % h === 0);
}

/** A small attention example with published numbers, for the step-by-step view to reproduce. */
export interface WorkedExample {
  /** Stable key, e.g. `'seed-003'` (URL fragment, select value). */
  id: string;
  /** Title shown to the reader. */
  name: string;
  /** Where the numbers come from and what they should come to. */
  source: string;
  /** One label per row of Q (and of K and V). */
  tokens: string[];
  /** The queries (tokens × dk). */
  q: Matrix;
  /** The keys (tokens × dk). */
  k: Matrix;
  /** The values (tokens × dv). */
  v: Matrix;
  /** Whether the source divides by √dk. */
  scale: boolean;
  /** Decimals the source prints. */
  digits: number;
}

/** Seed 003: "The cat", Q = K = I₂, V = [[2, 3], [4, 5]] → output [[2.66, 3.66], [3.34, 4.34]]. */
export const SEED_003: WorkedExample = {
  id: 'seed-003',
  name: 'Seed 003: "The cat" (2 × 2)',
  source: 'Q = K = I₂, V = [[2, 3], [4, 5]], dk = 2: softmax(QKᵀ/√2)·V = [[2.66, 3.66], [3.34, 4.34]]',
  tokens: ['The', 'cat'],
  q: [
    [1, 0],
    [0, 1],
  ],
  k: [
    [1, 0],
    [0, 1],
  ],
  v: [
    [2, 3],
    [4, 5],
  ],
  scale: true,
  digits: 2,
};

/** Seed 002's inputs, one 3-d embedding per token: its queries, keys and values alike. */
const SEED_002_INPUTS: Matrix = [
  [0.43, 0.15, 0.89],
  [0.55, 0.87, 0.66],
  [0.57, 0.85, 0.64],
  [0.22, 0.58, 0.33],
  [0.77, 0.25, 0.1],
  [0.05, 0.8, 0.55],
];

/** Seed 002: "Your journey starts with one step", 3-d embeddings, Q = K = V = the inputs, no scaling. */
export const SEED_002: WorkedExample = {
  id: 'seed-002',
  name: 'Seed 002: "Your journey starts with one step" (6 × 3)',
  source:
    'simple self-attention without trainable weights: scores = ' +
    'inputs·inputsᵀ, weights = softmax(scores), context = weights·inputs',
  tokens: ['Your', 'journey', 'starts', 'with', 'one', 'step'],
  q: SEED_002_INPUTS,
  k: SEED_002_INPUTS,
  v: SEED_002_INPUTS,
  scale: false,
  digits: 4,
};

/** The worked examples the step-by-step view offers, in menu order. */
export const WORKED_EXAMPLES: readonly WorkedExample[] = [SEED_003, SEED_002];
