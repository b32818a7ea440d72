/**
 * The kernel interface. Ops (src/ops) are written once against it; each backend registers an
 * implementation. Kernels take typed arrays (already offset: pass `subarray`s) and plain sizes,
 * write into caller-allocated outputs, and never allocate tensors themselves, so a WebAssembly
 * backend can run them in place on its linear memory.
 *
 * Dimension letters: B batch, H heads, L query length, S key length, D head size, R rows, C columns.
 */

/** Batched C = op(A) · op(B) (row-major); each operand's batch stride may be 0 to broadcast. */
export interface GemmParams {
  batch: number;
  m: number;
  n: number;
  k: number;
  /** A is stored (k, m) and used transposed. */
  transA: boolean;
  /** B is stored (n, k) and used transposed. */
  transB: boolean;
  strideA: number;
  strideB: number;
  strideC: number;
  /** C += A·B instead of C = A·B. */
  accumulate: boolean;
}

export type BinaryOp = 'add' | 'sub' | 'mul' | 'div';
export type UnaryOp = 'exp' | 'log' | 'neg' | 'sqrt' | 'tanh' | 'sigmoid' | 'abs';

/**
 * Additive attention bias of logical shape (B, H, L, S), with broadcast strides (0 = broadcast).
 * S is always contiguous. Masks of every kind are turned into this by the attention op.
 */
export interface AttentionBias {
  data: Float32Array;
  strideB: number;
  strideH: number;
  strideL: number;
}

export interface AttentionParams {
  b: number;
  h: number;
  l: number;
  s: number;
  /** Query/key head size. */
  d: number;
  /** Value head size. */
  dv: number;
  scale: number;
  /** Query i sees keys j <= i + (s - l) (aligned to the end, as with a KV cache). */
  causal: boolean;
  bias: AttentionBias | null;
}

/**
 * The kernel contract every backend implements (see the file comment): typed arrays and sizes in,
 * caller-allocated outputs written. `backend/js/` is the reference; wasm must agree with it.
 */
export interface Backend {
  /** The name {@link setBackend} selects it by: `'js'` or `'wasm'`. */
  readonly name: string;

  /**
   * Batched C = op(A) · op(B) (row-major) for each of `p.batch` matrices, as `GemmParams` describes;
   * writes c.
   */
  gemm(a: Float32Array, b: Float32Array, c: Float32Array, p: GemmParams): void;

  /** out = a ∘ b with broadcasting: `aStrides`/`bStrides` are per output dim, 0 where broadcast. */
  binary(
    op: BinaryOp,
    a: Float32Array,
    aStrides: readonly number[],
    b: Float32Array,
    bStrides: readonly number[],
    out: Float32Array,
    outShape: readonly number[],
  ): void;
  /** out = a ∘ scalar (or scalar ∘ a when `scalarFirst`). */
  binaryScalar(op: BinaryOp, a: Float32Array, scalar: number, out: Float32Array, scalarFirst: boolean): void;
  /** out = op(x) elementwise; x and out have the same length. */
  unary(op: UnaryOp, x: Float32Array, out: Float32Array): void;
  /**
   * Dropout's mask from `bits`, ceil(n/2) random words (element 2j takes the low 16 bits of word j,
   * element 2j + 1 the high 16): keep[i] = scale (as float32) where those bits are >= threshold,
   * else 0; out[i] = x[i]·scale rounded once to float32 (0·x where dropped).
   */
  dropoutMask(
    bits: Uint32Array,
    threshold: number,
    scale: number,
    x: Float32Array,
    keep: Float32Array,
    out: Float32Array,
  ): void;
  /**
   * Copy `rows` runs of `width` floats: dst[dstOffset + r·dstStride + j] = src[srcOffset +
   * r·srcStride + j] (srcStride 0 repeats one run: a bias into every row). Runs must not overlap.
   */
  copyRows(
    src: Float32Array,
    srcOffset: number,
    srcStride: number,
    dst: Float32Array,
    dstOffset: number,
    dstStride: number,
    rows: number,
    width: number,
  ): void;
  /** out = x^p elementwise. */
  pow(x: Float32Array, p: number, out: Float32Array): void;
  /** Sum over the axes where `outShape` is 1 and `shape` is not (keepdim layout); `out` is overwritten. */
  reduceSum(x: Float32Array, shape: readonly number[], out: Float32Array, outShape: readonly number[]): void;
  /** Copy x (shape) into out with dims permuted: out dim i = x dim perm[i]. */
  permute(x: Float32Array, shape: readonly number[], perm: readonly number[], out: Float32Array): void;

  /** Row-wise softmax over the last dim of an (R, C) matrix. */
  softmax(x: Float32Array, out: Float32Array, rows: number, cols: number): void;
  /** dx = y ∘ (dy − Σ dy∘y), rows of C. */
  softmaxBackward(y: Float32Array, dy: Float32Array, dx: Float32Array, rows: number, cols: number): void;
  /** Row-wise log-softmax over the last dim of an (R, C) matrix, x − logsumexp(x) per row. */
  logSoftmax(x: Float32Array, out: Float32Array, rows: number, cols: number): void;
  /** dx = dy − softmax(x)·Σ dy, with softmax recovered from y = logSoftmax(x). */
  logSoftmaxBackward(y: Float32Array, dy: Float32Array, dx: Float32Array, rows: number, cols: number): void;

  /** Normalise each row of C; saves mean and 1/σ per row for the backward pass. Affine if weight given. */
  layerNorm(
    x: Float32Array,
    weight: Float32Array | null,
    bias: Float32Array | null,
    out: Float32Array,
    mean: Float32Array,
    rstd: Float32Array,
    rows: number,
    cols: number,
    eps: number,
  ): void;
  /** dx, and (accumulated into) dweight and dbias when given. */
  layerNormBackward(
    x: Float32Array,
    weight: Float32Array | null,
    mean: Float32Array,
    rstd: Float32Array,
    dy: Float32Array,
    dx: Float32Array,
    dweight: Float32Array | null,
    dbias: Float32Array | null,
    rows: number,
    cols: number,
  ): void;

  /** out = max(x, 0) elementwise. */
  relu(x: Float32Array, out: Float32Array): void;
  /** dx = dy where x > 0, else 0 (0 at x = 0, as PyTorch). */
  reluBackward(x: Float32Array, dy: Float32Array, dx: Float32Array): void;
  /** PyTorch's exact gelu: x·Φ(x) with the erf form. */
  gelu(x: Float32Array, out: Float32Array): void;
  /** dx = dy · (Φ(x) + x·φ(x)), the derivative of the exact (erf) gelu. */
  geluBackward(x: Float32Array, dy: Float32Array, dx: Float32Array): void;

  /** out[i, :] = weight[ids[i], :]. Ids are validated by the op. */
  embedding(weight: Float32Array, ids: Int32Array, out: Float32Array, dim: number): void;
  /** dweight[ids[i], :] += dy[i, :], skipping ids equal to paddingIdx. */
  embeddingBackward(dy: Float32Array, ids: Int32Array, dweight: Float32Array, dim: number, paddingIdx: number): void;

  /**
   * Cross-entropy with label smoothing per row of logits (R, C): writes each row's loss into
   * `losses` (0 for ignored rows) and returns the number of counted rows.
   */
  crossEntropy(
    logits: Float32Array,
    targets: Int32Array,
    losses: Float32Array,
    rows: number,
    cols: number,
    ignoreIndex: number,
    labelSmoothing: number,
  ): number;
  /** dlogits for each row given the upstream scale per row (e.g. 1/count for a mean). */
  crossEntropyBackward(
    logits: Float32Array,
    targets: Int32Array,
    rowScale: Float32Array,
    dlogits: Float32Array,
    rows: number,
    cols: number,
    ignoreIndex: number,
    labelSmoothing: number,
  ): void;

  /**
   * Fused attention: out (B,H,L,Dv) = softmax(q·kᵀ·scale + bias, causal) · v, never holding more
   * than a row of scores; writes the log-sum-exp of each row (B,H,L) for the backward pass and,
   * when `weights` is given, the probabilities (B,H,L,S).
   */
  attention(
    q: Float32Array,
    k: Float32Array,
    v: Float32Array,
    out: Float32Array,
    lse: Float32Array,
    weights: Float32Array | null,
    p: AttentionParams,
  ): void;
  /** dq, dk, dv (overwritten) from dout, recomputing probabilities from lse. */
  attentionBackward(
    q: Float32Array,
    k: Float32Array,
    v: Float32Array,
    out: Float32Array,
    dout: Float32Array,
    lse: Float32Array,
    dq: Float32Array,
    dk: Float32Array,
    dv: Float32Array,
    p: AttentionParams,
  ): void;

  /** One Adam/AdamW step in place over a flat block of parameters. */
  adam(
    param: Float32Array,
    grad: Float32Array,
    m: Float32Array,
    v: Float32Array,
    lr: number,
    beta1: number,
    beta2: number,
    eps: number,
    weightDecay: number,
    decoupled: boolean,
    step: number,
  ): void;
}

/** A backend's kernels: every member of the contract but its name. */
export type Kernels = Omit<Backend, 'name'>;
export type KernelName = keyof Kernels;

/** Every kernel of the contract, by name: what each backend must register (checked by `build`). */
export const KERNEL_NAMES = [
  'gemm',
  'binary',
  'binaryScalar',
  'unary',
  'dropoutMask',
  'copyRows',
  'pow',
  'reduceSum',
  'permute',
  'softmax',
  'softmaxBackward',
  'logSoftmax',
  'logSoftmaxBackward',
  'layerNorm',
  'layerNormBackward',
  'relu',
  'reluBackward',
  'gelu',
  'geluBackward',
  'embedding',
  'embeddingBackward',
  'crossEntropy',
  'crossEntropyBackward',
  'attention',
  'attentionBackward',
  'adam',
] as const satisfies readonly KernelName[];
// A kernel added to the contract but not to the list above is a compile error here.
const listed: Exclude<KernelName, (typeof KERNEL_NAMES)[number]> extends never ? true : never = true;
void listed;

/**
 * A backend assembled from its files (tfjs style): each kernel-family file of a backend
 * (`backend/<name>/<family>.ts`) ends by registering its kernels here, and the backend's index
 * imports the family files and calls `build`, which checks that every kernel of the contract is
 * there exactly once. A new backend is a set of such files; a new kernel touches its family file.
 */
export class KernelTable {
  private readonly kernels = new Map<KernelName, { family: string; fn: unknown }>();
  constructor(readonly backend: string) {}

  register(family: string, kernels: Partial<Kernels>): void {
    for (const [name, fn] of Object.entries(kernels) as [KernelName, unknown][]) {
      const prev = this.kernels.get(name);
      if (prev)
        throw new Error(`${this.backend} backend: kernel '${name}' registered by both ${prev.family} and ${family}`);
      if (typeof fn !== 'function')
        throw new Error(`${this.backend} backend: kernel '${name}' of ${family} is not a function`);
      this.kernels.set(name, { family, fn });
    }
  }

  /** The backend, once every family has registered; throws naming the kernels still missing. */
  build(): Backend {
    const missing = KERNEL_NAMES.filter((k) => !this.kernels.has(k));
    if (missing.length > 0) throw new Error(`${this.backend} backend: no kernel registered for ${missing.join(', ')}`);
    const b: Record<string, unknown> = { name: this.backend };
    for (const k of KERNEL_NAMES) b[k] = this.kernels.get(k)!.fn;
    return b as unknown as Backend;
  }

  /** Which family registered each kernel (for tests and docs). */
  families(): Record<string, string> {
    return Object.fromEntries([...this.kernels].map(([k, v]) => [k, v.family]));
  }
}

const registry = new Map<string, Backend>();
let current: Backend | null = null;

/** Add a backend to the registry under its name; the first one registered becomes the current backend. */
export function registerBackend(backend: Backend): void {
  registry.set(backend.name, backend);
  current ??= backend;
}

/** Switch backends by name ('js', later 'wasm'). */
export function setBackend(name: string): void {
  const b = registry.get(name);
  if (!b) throw new Error(`setBackend: unknown backend '${name}', registered: ${[...registry.keys()].join(', ')}`);
  current = b;
}

/** The backend ops run on now; throws if none is registered. */
export function getBackend(): Backend {
  if (current === null) throw new Error('getBackend: no backend registered');
  return current;
}

/** Names of the registered backends, in registration order. */
export function backendNames(): string[] {
  return [...registry.keys()];
}
