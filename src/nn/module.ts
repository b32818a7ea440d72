import { noGrad } from '../autograd/grad-mode.ts';
import { shapeToString } from '../tensor/shape.ts';
import { type Device, deviceNamed, type TypedData } from '../tensor/storage.ts';
import { Tensor } from '../tensor/tensor.ts';
import type { QuantDType } from '../ops/index.ts';

/** How {@link Module.quantize} quantizes a tree. */
export interface QuantizeOptions {
  /** nn.Linear weights and attention's packed input projection: 'int8' or 'q4'. */
  dtype: QuantDType;
  /**
   * nn.Embedding tables, which tied output projections read too: 'int8', 'q4', or 'float32' (kept). Default: the
   * model's choice (Module.defaultTables): int8, but q4 in a q4 Llama-family GPT whose head is tied.
   */
  tables?: QuantDType | 'float32';
  /** Leave the quantized values zero instead of quantizing the float weights: for a model about to be loaded. */
  empty?: boolean;
  /**
   * How q4 scales are held: 'float16' (default; llama.cpp's Q4_0, 4.5 bits a weight), or 'float32' (the scales
   * of a q4 file written by older qkv, which loading keeps as stored).
   */
  q4Scales?: 'float16' | 'float32';
}

/** `options` with the defaults filled in, or a one-line error naming the option. */
function checkQuantizeOptions(
  options: QuantizeOptions,
  defaultTables: (dtype: QuantDType) => QuantDType | 'float32',
): Required<QuantizeOptions> {
  const dtype = options?.dtype;
  if (dtype !== 'int8' && dtype !== 'q4') throw new Error(`quantize: dtype must be 'int8' or 'q4', got ${show(dtype)}`);
  const tables = options.tables ?? defaultTables(dtype);
  if (tables !== 'int8' && tables !== 'q4' && tables !== 'float32')
    throw new Error(`quantize: tables must be 'int8', 'q4' or 'float32', got ${show(tables)}`);
  const q4Scales = options.q4Scales ?? 'float16';
  if (q4Scales !== 'float16' && q4Scales !== 'float32')
    throw new Error(`quantize: q4Scales must be 'float16' or 'float32', got ${show(q4Scales)}`);
  return { dtype, tables, empty: options.empty ?? false, q4Scales };
}

const show = (v: unknown): string => (typeof v === 'string' ? `'${v}'` : String(v));

export interface LoadStateDictOptions {
  /** Require the keys to match exactly (default true), as torch's load_state_dict(strict=True). */
  strict?: boolean;
}

/** What {@link Module.loadStateDict} matched, as torch's `_IncompatibleKeys`. */
export interface LoadResult {
  /**
   * Keys of this module's state dict that the given one lacks (left at their values; only without strict).
   */
  missingKeys: string[];
  /** Keys of the given state dict that this module does not have (ignored; only without strict). */
  unexpectedKeys: string[];
}

/**
 * Base class of every layer, after torch.nn.Module: registered parameters, buffers and submodules
 * give the dotted state-dict names PyTorch uses (`encoder.layers.0.self_attn.in_proj_weight`), so
 * weights move between the two unchanged. Properties are camelCase; registered names are torch's.
 */
/**
 * A parameter's or buffer's storage as long-lived storage of its device (with the wasm backend: WebAssembly
 * memory, where kernels read weights in place instead of copying them at every call); itself where its
 * device keeps no separate long-lived storage, or it is already there.
 */
function longLived(t: Tensor): Tensor {
  const d = t.device;
  if (d.isPersistent === undefined || d.isPersistent(t.storage)) return t;
  const s = d.alloc('float32', t.size, { persistent: true });
  // New storage is zero: zeros need no copy, and a model built to be loaded (nn/init's withoutInit) then never
  // writes its weights' pages before the loaded values arrive (the scan stops at the first nonzero value).
  if (!allZero(t.storage)) d.copy(t.storage, s, 'float32', t.size);
  return Tensor.fromStorage(d, s, t.shape, 'float32');
}

/** Whether host storage holds only zeros (false for any other storage). */
function allZero(storage: unknown): boolean {
  if (!(storage instanceof Float32Array)) return false;
  // −0 is kept by the copy (Object.is): only +0 is what new storage holds.
  for (let i = 0; i < storage.length; i++) if (storage[i] !== 0 || Object.is(storage[i], -0)) return false;
  return true;
}

function moveTo(t: Tensor, target: Device, values: TypedData): void {
  const s = target.alloc(t.dtype, t.size, { persistent: true });
  target.write(s, t.dtype, values);
  t.moveStorage_(target, s);
  t.grad = null;
}

export class Module {
  /** Training mode (dropout active) or eval mode; set for the whole tree by train() and eval(). */
  training = true;
  private readonly params = new Map<string, Tensor | null>();
  private readonly buffers = new Map<string, { tensor: Tensor; persistent: boolean }>();
  private readonly modules = new Map<string, Module>();

  /**
   * Register a trainable tensor under its PyTorch name and return the parameter (use the returned
   * tensor: with the wasm backend its values move to long-lived WebAssembly memory, where kernels
   * read weights in place instead of copying them at every call).
   */
  protected registerParameter(name: string, t: Tensor): Tensor;
  protected registerParameter(name: string, t: null): null;
  protected registerParameter(name: string, t: Tensor | null): Tensor | null {
    if (t) {
      if (t.dtype !== 'float32')
        throw new Error(`${this.constructor.name}: parameter '${name}' must be float32, got ${t.dtype}`);
      t = longLived(t);
      t.requiresGrad = true;
    }
    this.params.set(name, t);
    return t;
  }

  /** Register non-trainable state; persistent buffers are saved in the state dict. */
  protected registerBuffer(name: string, t: Tensor, persistent = true): Tensor {
    // Long-lived storage, like parameters: a buffer made inside a memoryScope must outlive it.
    if (t.dtype === 'float32') t = longLived(t);
    this.buffers.set(name, { tensor: t, persistent });
    return t;
  }

  /**
   * Register a submodule under its PyTorch name (the next segment of the dotted state-dict keys) and return
   * it.
   */
  protected registerModule<M extends Module>(name: string, m: M): M {
    this.modules.set(name, m);
    return m;
  }

  /** Remove the submodule registered as `name` (an adapter merged away); its parameters leave the tree. */
  protected removeModule(name: string): void {
    this.modules.delete(name);
  }

  /** Direct submodules with their registered names. */
  namedChildren(): [string, Module][] {
    return [...this.modules.entries()];
  }

  /** Every module in the tree (this one first, name ''), depth-first. */
  namedModules(prefix = ''): [string, Module][] {
    const out: [string, Module][] = [[prefix, this]];
    for (const [name, m] of this.modules) out.push(...m.namedModules(prefix ? `${prefix}.${name}` : name));
    return out;
  }

  /**
   * Every trainable parameter of the tree with its dotted PyTorch name (`prefix.` prepended), own ones first,
   * then each submodule's, in registration order.
   */
  namedParameters(prefix = ''): [string, Tensor][] {
    const out: [string, Tensor][] = [];
    for (const [name, p] of this.params) if (p) out.push([prefix ? `${prefix}.${name}` : name, p]);
    for (const [name, m] of this.modules) out.push(...m.namedParameters(prefix ? `${prefix}.${name}` : name));
    return out;
  }

  /** Every trainable parameter of the tree, in namedParameters() order (what an optimizer takes). */
  parameters(): Tensor[] {
    return this.namedParameters().map(([, p]) => p);
  }

  /** Every buffer of the tree with its dotted name; `persistentOnly` keeps those saved in the state dict. */
  namedBuffers(prefix = '', persistentOnly = false): [string, Tensor][] {
    const out: [string, Tensor][] = [];
    for (const [name, b] of this.buffers) {
      if (!persistentOnly || b.persistent) out.push([prefix ? `${prefix}.${name}` : name, b.tensor]);
    }
    for (const [name, m] of this.modules)
      out.push(...m.namedBuffers(prefix ? `${prefix}.${name}` : name, persistentOnly));
    return out;
  }

  /**
   * Quantize, in place and for inference, the weights of every layer of the tree that can hold quantized ones:
   * nn.Linear and attention's packed input projection in `dtype` (`int8`, a float32 scale per row, or `q4`, a
   * float16 scale per block of 32), nn.Embedding tables (and so the tied output projections that read them) in
   * `tables` (default {@link defaultTables}: int8 unless the model says otherwise). Each keeps the pair of
   * values and scales as the buffers `NAME` and `NAME_scale` (the names and layout `qkv export --dtype int8|q4`
   * writes) and drops the float weight, which is no longer a parameter. LayerNorm weights and biases stay
   * float32. A quantized layer passes no gradient. Returns this.
   */
  quantize(options: QuantizeOptions): this {
    const o = checkQuantizeOptions(options, (dtype) => this.defaultTables(dtype));
    for (const [name, m] of this.namedModules()) {
      try {
        m.quantizeOwn(o);
      } catch (e) {
        throw new Error(`quantize: ${name || this.constructor.name}: ${(e as Error).message}`);
      }
    }
    return this;
  }

  /**
   * The dtype {@link quantize} gives this tree's nn.Embedding tables when not told (`tables`): int8 (the part of
   * a small model whose rounding moves the next-token distribution most: docs/quantized.md); a model may choose
   * otherwise (models/gpt.ts: q4 where a Llama-family head is tied).
   */
  protected defaultTables(_dtype: QuantDType): QuantDType | 'float32' {
    return 'int8';
  }

  /**
   * This module's own part of {@link quantize}, not its submodules': nothing, unless it holds a weight that
   * can be quantized (a second call leaves a quantized weight as it is). Loading a quantized file calls it on
   * the layers whose weights the file holds quantized.
   */
  quantizeOwn(_options: Required<QuantizeOptions>): void {}

  /** Parameter `name` becomes the persistent buffers given (what quantizeOwn does with a float weight). */
  protected replaceParameter(name: string, buffers: [string, Tensor][]): void {
    this.params.delete(name);
    for (const [n, t] of buffers) this.registerBuffer(n, t);
  }

  /**
   * Total number of parameter elements (torch: sum(p.numel() for p in m.parameters())); a quantized weight
   * (`quantize()`, or an int8/q4 folder) counts as the parameters it stands for (its values, not its scales).
   */
  numParameters(): number {
    const quantized = this.namedBuffers('', true).reduce(
      (n, [, t]) => n + (t.dtype === 'int8' || t.dtype === 'q4' ? t.size : 0),
      0,
    );
    return quantized + this.parameters().reduce((n, p) => n + p.size, 0);
  }

  /** Parameters and persistent buffers by PyTorch name. The tensors are the live ones, not copies. */
  stateDict(): Record<string, Tensor> {
    const out: Record<string, Tensor> = {};
    for (const [k, v] of this.namedParameters()) out[k] = v;
    for (const [k, v] of this.namedBuffers('', true)) out[k] = v;
    return out;
  }

  /**
   * Copy values into this module's parameters and buffers by name. Shapes must match exactly;
   * float16/bfloat16 checkpoints arrive as float32 from the safetensors reader. With strict, any
   * missing or unexpected key is an error that lists them.
   */
  loadStateDict(
    stateDict: Record<string, Tensor> | Map<string, Tensor>,
    options: LoadStateDictOptions = {},
  ): LoadResult {
    const strict = options.strict ?? true;
    const source = stateDict instanceof Map ? stateDict : new Map(Object.entries(stateDict));
    const own = this.stateDict();
    const missingKeys = Object.keys(own).filter((k) => !source.has(k));
    const unexpectedKeys = [...source.keys()].filter((k) => !(k in own));
    if (strict && (missingKeys.length > 0 || unexpectedKeys.length > 0)) {
      const parts: string[] = [];
      if (missingKeys.length) parts.push(`missing keys: ${missingKeys.join(', ')}`);
      if (unexpectedKeys.length) parts.push(`unexpected keys: ${unexpectedKeys.join(', ')}`);
      throw new Error(`loadStateDict: state dict does not match ${this.constructor.name} (${parts.join('; ')})`);
    }
    const errors: string[] = [];
    for (const [k, dst] of Object.entries(own)) {
      const src = source.get(k);
      if (!src) continue;
      if (!(src instanceof Tensor)) {
        errors.push(`'${k}' is not a Tensor`);
      } else if (src.shape.length !== dst.shape.length || src.shape.some((d, i) => d !== dst.shape[i])) {
        errors.push(`'${k}' expected shape ${shapeToString(dst.shape)}, got ${shapeToString(src.shape)}`);
      } else if (src.dtype !== dst.dtype) {
        errors.push(`'${k}' expected dtype ${dst.dtype}, got ${src.dtype}`);
      }
    }
    if (errors.length) throw new Error(`loadStateDict: ${errors.join('; ')}`);
    noGrad(() => {
      for (const [k, dst] of Object.entries(own)) {
        const src = source.get(k);
        if (!src) continue;
        if (src.device.name === dst.device.name) dst.device.copy(src.storage, dst.storage, dst.dtype, dst.size);
        else dst.write(src.dataSync());
      }
    });
    return { missingKeys, unexpectedKeys };
  }

  /**
   * Move every parameter and buffer to the device of backend `name` ('js', 'wasm', ...), in place (the
   * tensors keep their identity, so optimizers made before still hold them; their state does not move),
   * values identical; gradients are dropped. As torch's `module.to(device)`. Reading off a device that reads
   * back only asynchronously needs {@link Module.toAsync}.
   */
  to(name: string): this {
    const target = deviceNamed(name, 'Module.to');
    for (const t of this.ownTensors()) {
      if (t.device.name === target.name) continue;
      moveTo(t, target, t.dataSync());
    }
    return this;
  }

  /** As {@link Module.to}, reading values back asynchronously (from any device). */
  async toAsync(name: string): Promise<this> {
    const target = deviceNamed(name, 'Module.toAsync');
    for (const t of this.ownTensors()) {
      if (t.device.name === target.name) continue;
      moveTo(t, target, await t.data());
    }
    return this;
  }

  private ownTensors(): Tensor[] {
    return [...this.parameters(), ...this.namedBuffers('', false).map(([, t]) => t)];
  }

  /** Training mode (dropout on) for this module and every submodule. */
  train(mode = true): this {
    for (const [, m] of this.namedModules()) m.training = mode;
    return this;
  }

  /** Eval mode (dropout off) for this module and every submodule; same as train(false). */
  eval(): this {
    return this.train(false);
  }

  /** Fill every parameter's gradient with 0, or with `setToNone` drop it (as torch; see Adam.zeroGrad). */
  zeroGrad(setToNone = false): void {
    for (const p of this.parameters()) {
      if (setToNone) p.grad = null;
      else if (p.grad) p.grad.device.fill(p.grad.storage, 'float32', 0, p.grad.size);
    }
  }
}

/**
 * Put `modules` (and all their submodules) in eval mode; the function returned puts every submodule
 * back in the mode it had. For code that yields in between (a generator); elsewhere use withEvalMode.
 */
export function enterEvalMode(modules: Module | readonly Module[]): () => void {
  const saved = (modules instanceof Module ? [modules] : modules).flatMap((m) =>
    m.namedModules().map(([, s]) => [s, s.training] as const),
  );
  for (const [s] of saved) s.training = false;
  return () => {
    for (const [s, mode] of saved) s.training = mode;
  };
}

/**
 * Run `fn` with `modules` in eval mode (dropout off), then restore each submodule's mode as it was,
 * whether `fn` returns or throws.
 */
export function withEvalMode<T>(modules: Module | readonly Module[], fn: () => T): T {
  const restore = enterEvalMode(modules);
  try {
    return fn();
  } finally {
    restore();
  }
}

/** Submodules named '0', '1', ... as torch.nn.ModuleList. */
export class ModuleList<M extends Module> extends Module implements Iterable<M> {
  private readonly items: M[] = [];

  constructor(items: M[] = []) {
    super();
    for (const m of items) this.push(m);
  }

  /** Append a module, registered under the next index ('0', '1', ...). */
  push(m: M): void {
    this.registerModule(String(this.items.length), m);
    this.items.push(m);
  }

  /** Number of modules in the list. */
  get length(): number {
    return this.items.length;
  }

  /** The module at index i (negative counts from the end); throws if out of range. */
  at(i: number): M {
    const m = this.items.at(i);
    if (!m) throw new Error(`ModuleList: index ${i} is out of range for ${this.items.length} modules`);
    return m;
  }

  /** The modules in order. */
  [Symbol.iterator](): Iterator<M> {
    return this.items[Symbol.iterator]();
  }
}
