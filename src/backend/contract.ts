import type { Device, Storage } from '../tensor/storage.ts';

/**
 * The kernel contract (re-exported by backend.ts, which adds the registry of backends). Ops (src/ops) are
 * written once against it; each backend registers an implementation. Kernels take the backend's storage
 * handles (`F32`, `I32`, `Storage`: typed arrays on the CPU backends, buffers on a GPU) and plain sizes,
 * write into caller-allocated outputs, and never allocate tensors themselves, so a WebAssembly backend runs
 * them in place on its linear memory. A kernel never hands a value back to the host: what it computes goes
 * into storage.
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
  /** Elements of A, B, C to skip before the first matrix (0 when absent). */
  offsetA?: number;
  offsetB?: number;
  offsetC?: number;
}

/** Float32 storage of the backend in use (a Float32Array on js and wasm). */
export type F32 = Storage<'float32'>;
/** Int32 storage (token ids, targets). */
export type I32 = Storage<'int32'>;
/** Int8 storage: a quantized weight's values (an Int8Array on js and wasm). */
export type I8 = Storage<'int8'>;
/** Signed 4-bit values packed two a byte, element 2i in the low nibble (a Uint8Array on js and wasm). */
export type Q4 = Storage<'q4'>;
/** IEEE half-precision values as their bits: a q4 weight's scales (a Uint16Array on js and wasm). */
export type F16 = Storage<'float16'>;

export type BinaryOp = 'add' | 'sub' | 'mul' | 'div';
export type UnaryOp = 'exp' | 'log' | 'neg' | 'sqrt' | 'tanh' | 'sigmoid' | 'abs';

/**
 * Additive attention bias of logical shape (B, H, L, S), with broadcast strides (0 = broadcast).
 * S is always contiguous. Masks of every kind are turned into this by the attention op.
 */
export interface AttentionBias {
  data: F32;
  strideB: number;
  strideH: number;
  strideL: number;
}

export interface AttentionParams {
  b: number;
  /** Query heads. */
  h: number;
  /**
   * Key/value heads (grouped-query attention, Ainslie et al. 2023; default h): query head i reads KV head
   * ⌊i / (h / hk)⌋, so k is (B, hk, S, D) and v (B, hk, S, Dv), never copied per query head. hk divides h.
   */
  hk?: number;
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
  /** The name {@link setBackend} selects it by: `'js'`, `'wasm'`, ... */
  readonly name: string;
  /**
   * Where its tensors live: storage, uploads and reads (the js and wasm backends share the host device
   * `cpu`; the wasm backend's places long-lived and scoped blocks in WebAssembly memory).
   */
  readonly device: Device;

  /**
   * Batched C = op(A) · op(B) (row-major) for each of `p.batch` matrices, as `GemmParams` describes;
   * writes c.
   */
  gemm(a: F32, b: F32, c: F32, p: GemmParams): void;

  /** out = a ∘ b with broadcasting: `aStrides`/`bStrides` are per output dim, 0 where broadcast. */
  binary(
    op: BinaryOp,
    a: F32,
    aStrides: readonly number[],
    b: F32,
    bStrides: readonly number[],
    out: F32,
    outShape: readonly number[],
  ): void;
  /** out = a ∘ scalar (or scalar ∘ a when `scalarFirst`). */
  binaryScalar(op: BinaryOp, a: F32, scalar: number, out: F32, scalarFirst: boolean): void;
  /** out = op(x) elementwise; x and out have the same length. */
  unary(op: UnaryOp, x: F32, out: F32): void;
  /**
   * Dropout's mask from `bits`, ceil(n/2) random words (element 2j takes the low 16 bits of word j,
   * element 2j + 1 the high 16): keep[i] = scale (as float32) where those bits are >= threshold,
   * else 0; out[i] = x[i]·scale rounded once to float32 (0·x where dropped).
   */
  dropoutMask(
    bits: Uint32Array /* host words, drawn on the host */,
    threshold: number,
    scale: number,
    x: F32,
    keep: F32,
    out: F32,
  ): void;
  /**
   * Copy `rows` runs of `width` elements of any one dtype but q4: dst[dstOffset + r·dstStride + j] =
   * src[srcOffset + r·srcStride + j] (srcStride 0 repeats one run: a bias into every row). Runs must not
   * overlap.
   */
  copyRows(
    src: Storage,
    srcOffset: number,
    srcStride: number,
    dst: Storage,
    dstOffset: number,
    dstStride: number,
    rows: number,
    width: number,
  ): void;
  /** out = x^p elementwise. */
  pow(x: F32, p: number, out: F32): void;
  /** Sum over the axes where `outShape` is 1 and `shape` is not (keepdim layout); `out` is overwritten. */
  reduceSum(x: F32, shape: readonly number[], out: F32, outShape: readonly number[]): void;
  /** Copy x (shape; any dtype but q4) into out with dims permuted: out dim i = x dim perm[i]. */
  permute(x: Storage, shape: readonly number[], perm: readonly number[], out: Storage): void;
  /**
   * dst row i = src row rows[i] (rows of `width` elements of any one dtype but q4; repeats allowed): the
   * beam search's reorder of every cache tensor. `rows` are host indices, chosen on the host each step.
   */
  gatherRows(src: Storage, rows: Int32Array, dst: Storage, width: number): void;
  /** out[r] = the index of the largest of row r's C values (the first of equals). */
  argmax(x: F32, out: I32, rows: number, cols: number): void;
  /**
   * An additive attention bias from a bool/uint8 or int32 mask of n elements: out[i] = −∞ where
   * (mask[i] ≠ 0) equals `blockWhen` (1: true blocks, as nn.MultiheadAttention; 0: true allows, as
   * F.scaled_dot_product_attention), else 0.
   */
  maskToBias(mask: Storage, out: F32, n: number, blockWhen: 0 | 1): void;
  /** out[i] = 1 where x[i] equals `value`, else 0: a bool mask from n int32 ids (the padding mask of a batch). */
  equalScalar(x: I32, value: number, out: Storage<'bool'>, n: number): void;

  /** Row-wise softmax over the last dim of an (R, C) matrix. */
  softmax(x: F32, out: F32, rows: number, cols: number): void;
  /** dx = y ∘ (dy − Σ dy∘y), rows of C. */
  softmaxBackward(y: F32, dy: F32, dx: F32, rows: number, cols: number): void;
  /** Row-wise log-softmax over the last dim of an (R, C) matrix, x − logsumexp(x) per row. */
  logSoftmax(x: F32, out: F32, rows: number, cols: number): void;
  /** dx = dy − softmax(x)·Σ dy, with softmax recovered from y = logSoftmax(x). */
  logSoftmaxBackward(y: F32, dy: F32, dx: F32, rows: number, cols: number): void;

  /** Normalise each row of C; saves mean and 1/σ per row for the backward pass. Affine if weight given. */
  layerNorm(
    x: F32,
    weight: F32 | null,
    bias: F32 | null,
    out: F32,
    mean: F32,
    rstd: F32,
    rows: number,
    cols: number,
    eps: number,
  ): void;
  /** dx, and (accumulated into) dweight and dbias when given. */
  layerNormBackward(
    x: F32,
    weight: F32 | null,
    mean: F32,
    rstd: F32,
    dy: F32,
    dx: F32,
    dweight: F32 | null,
    dbias: F32 | null,
    rows: number,
    cols: number,
  ): void;

  /**
   * RMS norm over rows of C (Zhang & Sennrich 2019; Llama's, as transformers' LlamaRMSNorm): with
   * r = 1/√(Σx²/C + ε), out = (x·r)·weight (weight optional); saves r per row for the backward pass.
   */
  rmsNorm(x: F32, weight: F32 | null, out: F32, rstd: F32, rows: number, cols: number, eps: number): void;
  /**
   * With x̂ = x·r and g = dy·weight: dx = r·(g − x̂·Σ(g·x̂)/C); dweight += Σ_rows dy·x̂ when given.
   */
  rmsNormBackward(
    x: F32,
    weight: F32 | null,
    rstd: F32,
    dy: F32,
    dx: F32,
    dweight: F32 | null,
    rows: number,
    cols: number,
  ): void;
  /**
   * Rotary position embedding (Su et al. 2021) in transformers' rotate_half layout: x is (outer, T, heads, D)
   * and cos, sin (T, D/2) the tables of its T positions; for i < D/2, with a = x[i], b = x[i + D/2]:
   * out[i] = a·cos − b·sin, out[i + D/2] = b·cos + a·sin. `inverse` rotates by −θ (sin negated): the
   * gradient, since a rotation's transpose is its inverse. out may be x.
   */
  rotary(
    x: F32,
    cos: F32,
    sin: F32,
    out: F32,
    outer: number,
    positions: number,
    heads: number,
    dim: number,
    inverse: boolean,
  ): void;
  /** The gated feed-forward's activation (Shazeer 2020, SwiGLU): out = silu(gate)·up = gate·σ(gate)·up. */
  swiglu(gate: F32, up: F32, out: F32): void;
  /** dgate = dy·up·σ(g)·(1 + g·(1 − σ(g))), dup = dy·g·σ(g) (overwritten). */
  swigluBackward(gate: F32, up: F32, dy: F32, dgate: F32, dup: F32): void;

  /** out = max(x, 0) elementwise. */
  relu(x: F32, out: F32): void;
  /** dx = dy where x > 0, else 0 (0 at x = 0, as PyTorch). */
  reluBackward(x: F32, dy: F32, dx: F32): void;
  /** PyTorch's exact gelu: x·Φ(x) with the erf form. */
  gelu(x: F32, out: F32): void;
  /** dx = dy · (Φ(x) + x·φ(x)), the derivative of the exact (erf) gelu. */
  geluBackward(x: F32, dy: F32, dx: F32): void;
  /**
   * PyTorch's gelu(x, approximate='tanh') (GPT-2's gelu_new): ½·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), one
   * kernel (it was eight elementwise ops). Backends may compute it as x·σ(2u), the same function.
   */
  geluTanh(x: F32, out: F32): void;
  /** dx = dy · (½(1 + t) + ½·x·(1 − t²)·√(2/π)·(1 + 3·0.044715·x²)), t = tanh(√(2/π)·(x + 0.044715·x³)). */
  geluTanhBackward(x: F32, dy: F32, dx: F32): void;

  /** out[i, :] = weight[ids[i], :]. Ids are validated by the op. */
  embedding(weight: F32, ids: I32, out: F32, dim: number): void;
  /** dweight[ids[i], :] += dy[i, :], skipping ids equal to paddingIdx. */
  embeddingBackward(dy: F32, ids: I32, dweight: F32, dim: number, paddingIdx: number): void;

  /**
   * Cross-entropy with label smoothing per row of logits (R, C): writes each row's loss into `losses` (0
   * for ignored rows), and into `reduced` (total, count): the number of counted rows, and their losses'
   * sum (accumulated in float64), divided by the count when `mean`. No value goes back to the host.
   */
  crossEntropy(
    logits: F32,
    targets: I32,
    losses: F32,
    reduced: F32,
    rows: number,
    cols: number,
    ignoreIndex: number,
    labelSmoothing: number,
    mean: boolean,
  ): void;
  /**
   * dlogits for each row, scaled by the upstream gradient: `gradOut` has one value per row when `perRow`
   * (reduction 'none'), else one for all, divided by `reduced`[1] (the count) when `reduced` is given
   * (reduction 'mean': scale = fround(fround(1/count)·g)).
   */
  crossEntropyBackward(
    logits: F32,
    targets: I32,
    gradOut: F32,
    perRow: boolean,
    reduced: F32 | null,
    dlogits: F32,
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
  attention(q: F32, k: F32, v: F32, out: F32, lse: F32, weights: F32 | null, p: AttentionParams): void;
  /** dq, dk, dv (overwritten) from dout, recomputing probabilities from lse. */
  attentionBackward(
    q: F32,
    k: F32,
    v: F32,
    out: F32,
    dout: F32,
    lse: F32,
    dq: F32,
    dk: F32,
    dv: F32,
    p: AttentionParams,
  ): void;

  /** One Adam/AdamW step in place over a flat block of parameters. */
  adam(
    param: F32,
    grad: F32,
    m: F32,
    v: F32,
    lr: number,
    beta1: number,
    beta2: number,
    eps: number,
    weightDecay: number,
    decoupled: boolean,
    step: number,
  ): void;
  /**
   * out (R, outF) = x·Wᵀ + bias, W = wq (outF, inF; −128..127) · wScale (outF), x int8 per row
   * (js/quantized.ts).
   */
  linearInt8(x: F32, wq: I8, wScale: F32, bias: F32 | null, out: F32, rows: number, inF: number, outF: number): void;
  /**
   * As {@link linearInt8}, wq q4 (outF, inF) with one scale per block of 32 along inF: wScale (outF, inF/32),
   * float32 or float16 (each half widened to float32 exactly, then used as a float32 scale would be).
   */
  linearQ4(
    x: F32,
    wq: Q4,
    wScale: F32 | F16,
    bias: F32 | null,
    out: F32,
    rows: number,
    inF: number,
    outF: number,
  ): void;
  /**
   * Rows of an int8 table (num, dim) picked by ids (n): out (n, dim), each value q·scale[row] rounded once to
   * float32 (what the table dequantized at load holds). Ids are in range (the op checks them where it reads them).
   */
  embeddingInt8(wq: I8, wScale: F32, ids: I32, out: F32, dim: number): void;
  /**
   * As {@link embeddingInt8}, the table q4 (num, dim) with a scale per block of 32 along dim: wScale (num, dim/32),
   * float32 or float16 (widened exactly).
   */
  embeddingQ4(wq: Q4, wScale: F32 | F16, ids: I32, out: F32, dim: number): void;
}

/** A backend's kernels: every member of the contract but its name and device. */
export type Kernels = Omit<Backend, 'name' | 'device'>;
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
  'gatherRows',
  'argmax',
  'maskToBias',
  'equalScalar',
  'softmax',
  'softmaxBackward',
  'logSoftmax',
  'logSoftmaxBackward',
  'layerNorm',
  'layerNormBackward',
  'rmsNorm',
  'rmsNormBackward',
  'rotary',
  'swiglu',
  'swigluBackward',
  'relu',
  'reluBackward',
  'gelu',
  'geluBackward',
  'geluTanh',
  'geluTanhBackward',
  'embedding',
  'embeddingBackward',
  'crossEntropy',
  'crossEntropyBackward',
  'attention',
  'attentionBackward',
  'adam',
  'linearInt8',
  'linearQ4',
  'embeddingInt8',
  'embeddingQ4',
] as const satisfies readonly KernelName[];
// A kernel added to the contract but not to the list above is a compile error here.
const listed: Exclude<KernelName, (typeof KERNEL_NAMES)[number]> extends never ? true : never = true;
void listed;

/** What a host backend's kernel takes for each handle type: the typed array it is. */
type HostArg<T> = T extends Storage<infer D> ? HostArrays[D] : T extends AttentionParams ? HostAttentionParams : T;
/** The host array of each dtype (q4 packed two a byte, bool one a byte). */
interface HostArrays {
  float32: Float32Array;
  int32: Int32Array;
  int8: Int8Array;
  uint8: Uint8Array;
  bool: Uint8Array;
  q4: Uint8Array;
  float16: Uint16Array;
}
type HostArgs<A extends readonly unknown[]> = { [I in keyof A]: HostArg<A[I]> };

/** {@link AttentionParams} with the bias as the host array it is on the CPU backends. */
export interface HostAttentionParams extends Omit<AttentionParams, 'bias'> {
  bias: (Omit<AttentionBias, 'data'> & { data: Float32Array }) | null;
}

/**
 * The kernels as a backend whose storage is host typed arrays (js, wasm) writes them: the contract with
 * every handle replaced by its array, so the kernel bodies index arrays while ops only ever hold handles.
 */
export type HostKernels = {
  [K in KernelName]: Kernels[K] extends (...a: infer A) => infer R ? (...a: HostArgs<A>) => R : never;
};

/**
 * A backend assembled from its files (tfjs style): each kernel-family file of a backend
 * (`backend/<name>/<family>.ts`) ends by registering its kernels here, and the backend's index
 * imports the family files and calls `build`, which checks that every kernel of the contract is
 * there exactly once. A new backend is a set of such files; a new kernel touches its family file.
 * `T` is the form its kernels are written in: {@link HostKernels} for backends on host memory.
 */
export class KernelTable<T extends Record<KernelName, unknown> = Kernels> {
  private readonly kernels = new Map<KernelName, { family: string; fn: unknown }>();
  constructor(readonly backend: string) {}

  register(family: string, kernels: Partial<T>): void {
    for (const [name, fn] of Object.entries(kernels) as [KernelName, unknown][]) {
      const prev = this.kernels.get(name);
      if (prev)
        throw new Error(`${this.backend} backend: kernel '${name}' registered by both ${prev.family} and ${family}`);
      if (typeof fn !== 'function')
        throw new Error(`${this.backend} backend: kernel '${name}' of ${family} is not a function`);
      this.kernels.set(name, { family, fn });
    }
  }

  /** The backend on `device`, once every family has registered; throws naming the kernels still missing. */
  build(device: Device): Backend {
    const missing = KERNEL_NAMES.filter((k) => !this.kernels.has(k));
    if (missing.length > 0) throw new Error(`${this.backend} backend: no kernel registered for ${missing.join(', ')}`);
    const b: Record<string, unknown> = { name: this.backend, device };
    for (const k of KERNEL_NAMES) b[k] = this.kernels.get(k)!.fn;
    return b as unknown as Backend;
  }

  /** Which family registered each kernel (for tests and docs). */
  families(): Record<string, string> {
    return Object.fromEntries([...this.kernels].map(([k, v]) => [k, v.family]));
  }
}

/** A host backend (js, wasm) seen with its kernels on typed arrays, for kernel tests and benchmarks. */
export type HostBackend = HostKernels & { readonly name: string; readonly device: Device };

/** `b`'s kernels on typed arrays: only for backends whose storage is host arrays (js, wasm). */
export function hostBackend(b: Backend): HostBackend {
  if (b.device.name !== 'cpu')
    throw new Error(`hostBackend: backend '${b.name}' does not keep its tensors on the host`);
  return b as unknown as HostBackend;
}
