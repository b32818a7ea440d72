/**
 * Capture and replay of a step (issue 62; tinygrad's TinyJit, CUDA graphs, ONNX Runtime's memory patterns).
 * `capture(step, inputs)` runs `step(...inputs)` once, eagerly, through a recording layer over the current
 * backend: a proxy {@link Backend} whose kernels log their arguments before running, and whose device logs the
 * storage the step allocates (ops allocate through `backend.device`: ops/util's `empty`, `scratch`, `upload`,
 * the Tensor constructor). Every storage handle a kernel gets is then one of three things: an input's (swapped
 * at each replay), one the step allocated (a slot of the plan), or one that lived before (weights, a static KV
 * cache: used by reference, so writes into it persist). `Captured.replay(inputs)` runs the recorded calls
 * again with the inputs' storage swapped in: no Tensor objects, no autograd records, no per-op checks, its
 * slots in buffers planned once from their lifetimes (a buffer serves every slot of its dtype and size whose
 * uses do not overlap) and reused by every replay. The kernels are the backend's own, given the same values,
 * so a replay is bit-identical to the eager run.
 *
 * What cannot be captured fails the capture with a {@link CaptureError} naming it: a host read of a tensor's
 * values (dataSync, item, data: the step would branch on, or hand back, values the replay cannot see), grad
 * mode on (autograd records), dropout in training mode (random bits drawn on the host), a view into a step's
 * own buffer. What the step reads from the host besides its inputs (sizes, positions, flags) is frozen at
 * capture: a step must be a function of its inputs' shapes and values, and of the dynamic scalars it declares
 * (withScalars: host numbers each replay passes anew, a KV cache's filled length) (docs/compiled.md).
 *
 * over 500 lines: the recorder, the plan and the replay share the private Ref, Slot and Call records; split, they
 * would have to export them.
 */
import { isGradEnabled } from '../autograd/grad-mode.ts';
import { type Backend, getBackend, KERNEL_NAMES, type KernelName, withBackend } from '../backend/backend.ts';
import { shapeToString } from '../tensor/shape.ts';
import {
  type AllocOptions,
  type Device,
  type DType,
  type Storage,
  setHostReadGuard,
  storageLength,
} from '../tensor/storage.ts';
import { Tensor } from '../tensor/tensor.ts';
import { OwnedStorage } from './owned.ts';

/** Why a step could not be captured (a host read, grad mode, random draws, ...). */
export class CaptureError extends Error {
  /** `CaptureError`. */
  override name = 'CaptureError';
}

/** A recorded argument that is an input's storage (`input` ≥ 0) or a slot of the plan (`slot` ≥ 0). */
class Ref {
  constructor(
    readonly input: number,
    readonly slot: number,
  ) {}
}

interface Slot {
  dtype: DType;
  /** Elements (q4: values, two a byte). */
  n: number;
  /** Index of the first call that may use it (its allocation). */
  first: number;
  /** Index of the last call that uses it (Infinity: an output). */
  last: number;
}

/** One recorded call: a kernel of the backend, or a device's fill / write / copy. */
interface Call {
  what: string;
  fn: (...args: unknown[]) => unknown;
  self: unknown;
  args: unknown[];
  /** Where the call depends on the dynamic scalars: sets its arguments from a replay's values (withScalars). */
  patch?: ScalarPatch;
}

/**
 * Sets the arguments of a call recorded inside {@link withScalars} from a replay's dynamic scalars: `what` is
 * the kernel's name (or `device` for a fill, write or copy), `args` the arguments the replay passes (numbers
 * and the plain parameter objects the kernel got, storage already swapped in), changed in place.
 */
export type ScalarPatch = (what: string, args: unknown[], scalars: readonly number[]) => void;

/** The patch of the innermost {@link withScalars} running inside a capture (null: none). */
let scalarPatch: ScalarPatch | null = null;
/** Dynamic scalars the running capture declared (null: no capture running). */
let capturing: readonly number[] | null = null;

/**
 * Run `op`, whose kernel calls take sizes or offsets computed from host numbers that change from replay to
 * replay (a KV cache's filled length): the dynamic scalars `capture(step, inputs, { scalars })` declares and
 * every `replay(inputs, scalars)` passes anew. Outside a capture it only runs `op`. Inside one, every call
 * `op` makes is recorded with `patch`, which a replay calls first with that replay's scalars to set the call's
 * arguments (the attention's key length, a copy's offset). The storage `op` allocates must not depend on the
 * scalars (a replay's buffers are planned once): size it for the largest value (docs/compiled.md).
 */
export function withScalars<T>(patch: ScalarPatch, op: () => T): T {
  if (!capturing) return op();
  if (capturing.length === 0)
    throw new CaptureError(
      'capture: the step runs calls that depend on dynamic scalars (withScalars), but the capture declares none ' +
        '(capture(step, inputs, { scalars }))',
    );
  const outer = scalarPatch;
  scalarPatch = outer
    ? (what, args, v) => {
        outer(what, args, v);
        patch(what, args, v);
      }
    : patch;
  try {
    return op();
  } finally {
    scalarPatch = outer;
  }
}

/** Where an input's storage is put at each replay: `container[key]`. */
interface Patch {
  container: Record<string | number, unknown>;
  key: string | number;
  input: number;
}

/** An int32 input used as the ids of an embedding kernel: checked in range at each replay (the op's check). */
interface IdsGuard {
  input: number;
  rows: number;
  kernel: string;
}

/** Sizes of a capture, for docs and benchmarks. */
export interface CaptureStats {
  /** Kernel calls replayed per step. */
  kernels: number;
  /** Device calls (fills of zero-filled storage, writes of host constants, copies) replayed per step. */
  deviceCalls: number;
  /** Storage the step allocated when run eagerly. */
  allocations: number;
  /** Buffers of the plan that hold them (each reused across slots and replays). */
  buffers: number;
  /** Bytes of those buffers. */
  bytes: number;
}

/**
 * Captures made and replays run since the process started, by every {@link capture} and {@link Captured.replay}
 * (compile's, the static caches' included): what tests read to see that a path was replayed, not run eagerly.
 */
export const captureCounts: {
  /** Captures made (each runs its step once, eagerly, recording it). */
  captures: number;
  /** Replays run. */
  replays: number;
} = { captures: 0, replays: 0 };

const BYTES: Record<DType, number> = { float32: 4, int32: 4, bool: 1, uint8: 1, int8: 1, q4: 1, float16: 2 };

/** A captured step: {@link replay} runs it again on new inputs of the same shapes and dtypes. */
export class Captured {
  /** What one replay runs and the memory of its plan. */
  readonly stats: CaptureStats;
  private readonly calls: Call[];
  private readonly patches: Patch[];
  private readonly outputs: ((inputs: readonly Tensor[]) => Tensor)[];
  /** The plan's buffers (null once released). */
  private storage: OwnedStorage | null;

  constructor(
    private readonly backend: Backend,
    private readonly inputSpecs: readonly { dtype: DType; shape: readonly number[] }[],
    recorded: readonly Call[],
    slots: readonly Slot[],
    outputRefs: readonly { ref: unknown; shape: readonly number[]; dtype: DType }[],
    private readonly guards: readonly IdsGuard[],
    /** How many dynamic scalars each replay takes. */
    private readonly scalarCount = 0,
  ) {
    const device = backend.device;
    const storage = new OwnedStorage(device, this);
    this.storage = storage;
    // The plan: each slot gets a buffer of its dtype and size that no slot live at the same time holds.
    const pools = new Map<string, { buffer: Storage; freeAfter: number }[]>();
    const buffers: Storage[] = [];
    let bytes = 0;
    for (const s of slots) {
      const key = `${s.dtype}:${s.n}`;
      const pool = pools.get(key) ?? [];
      pools.set(key, pool);
      let entry = pool.find((e) => e.freeAfter < s.first);
      if (!entry) {
        // Long-lived storage: under wasm, a block of its memory, so the kernels run on it in place.
        entry = { buffer: storage.alloc(s.dtype, s.n), freeAfter: -1 };
        pool.push(entry);
        bytes += storageLength(s.dtype, s.n) * BYTES[s.dtype];
      }
      entry.freeAfter = s.last;
      buffers.push(entry.buffer);
    }
    this.patches = [];
    const concrete = (v: unknown, container: Record<string | number, unknown>, key: string | number): unknown => {
      if (v instanceof Ref) {
        if (v.slot >= 0) return buffers[v.slot];
        this.patches.push({ container, key, input: v.input });
        return null;
      }
      if (!holdsRef(v)) return v; // by identity (a GPU backend's storage handle is a plain object)
      if (Array.isArray(v)) {
        const out: unknown[] = [];
        v.forEach((x, i) => {
          out[i] = concrete(x, out as unknown as Record<number, unknown>, i);
        });
        return out;
      }
      if (isPlainObject(v)) {
        const out: Record<string, unknown> = {};
        for (const [k, x] of Object.entries(v)) out[k] = concrete(x, out, k);
        return out;
      }
      return v;
    };
    this.calls = recorded.map((c) => {
      const args: unknown[] = [];
      c.args.forEach((a, i) => {
        args[i] = concrete(a, args as unknown as Record<number, unknown>, i);
      });
      return { ...c, args };
    });
    this.outputs = outputRefs.map(({ ref, shape, dtype }) => {
      if (ref instanceof Ref && ref.input >= 0) return (inputs) => inputs[ref.input];
      const t = Tensor.fromStorage(device, ref instanceof Ref ? buffers[ref.slot] : (ref as Storage), shape, dtype);
      return () => t;
    });
    const kernels = recorded.filter((c) => c.what !== 'device').length;
    this.stats = {
      kernels,
      deviceCalls: recorded.length - kernels,
      allocations: slots.length,
      buffers: new Set(buffers).size,
      bytes,
    };
  }

  /**
   * Run the step again on `inputs` (the captured dtypes and shapes, on the captured backend's device): the
   * recorded calls with the inputs' storage swapped in. The outputs are the plan's buffers, the same tensors at
   * every replay: read or copy them before the next replay of this capture overwrites them. `scalars`: the
   * dynamic scalars' values for this replay, as many as the capture declared (see {@link withScalars}).
   */
  replay(inputs: readonly Tensor[], scalars: readonly number[] = []): Tensor[] {
    if (!this.storage) throw new Error('replay: this capture was released (its buffers are freed)');
    checkInputs(inputs, this.inputSpecs, this.backend);
    if (!Array.isArray(scalars) || scalars.length !== this.scalarCount || !scalars.every(Number.isFinite))
      throw new Error(
        `replay: scalars must be ${this.scalarCount} finite numbers as captured, got ` +
          `${Array.isArray(scalars) ? `[${scalars.join(', ')}]` : typeof scalars}`,
      );
    for (const g of this.guards) {
      const t = inputs[g.input];
      const ids = t.device.readSync?.(t.storage, 'int32', t.size) as Int32Array | undefined;
      if (!ids) continue; // a GPU trusts its ids, as the eager op does
      for (let i = 0; i < t.size; i++) {
        if (!(ids[i] >= 0 && ids[i] < g.rows))
          throw new Error(
            `replay: input ${g.input}: index ${ids[i]} at position ${i} is out of range for ${g.rows} rows`,
          );
      }
    }
    for (const p of this.patches) p.container[p.key] = inputs[p.input].storage;
    for (const c of this.calls) {
      c.patch?.(c.what, c.args, scalars);
      c.fn.apply(c.self, c.args);
    }
    captureCounts.replays++;
    return this.outputs.map((o) => o(inputs));
  }

  /**
   * Free the plan's buffers now (else they are freed once this capture is collected): no replay may follow, and
   * the outputs of its replays must no longer be read.
   */
  release(): void {
    this.storage?.releaseAll();
    this.storage = null;
  }
}

/** Whether a recorded argument holds a {@link Ref} (in arrays and plain objects, as `arg` builds them). */
function holdsRef(v: unknown, depth = 0): boolean {
  if (v instanceof Ref) return true;
  if (depth >= 3) return false;
  if (Array.isArray(v)) return v.some((x) => holdsRef(x, depth + 1));
  if (isPlainObject(v)) return Object.values(v).some((x) => holdsRef(x, depth + 1));
  return false;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && Object.getPrototypeOf(v) === Object.prototype;
}

function checkInputs(
  inputs: readonly Tensor[],
  specs: readonly { dtype: DType; shape: readonly number[] }[],
  backend: Backend,
): void {
  if (!Array.isArray(inputs) || inputs.length !== specs.length)
    throw new Error(`replay: expected ${specs.length} input tensors, got ${Array.isArray(inputs) ? inputs.length : 0}`);
  inputs.forEach((t, i) => {
    const s = specs[i];
    if (!(t instanceof Tensor)) throw new Error(`replay: input ${i} must be a Tensor, got ${typeof t}`);
    if (t.dtype !== s.dtype || t.shape.length !== s.shape.length || t.shape.some((d, j) => d !== s.shape[j]))
      throw new Error(
        `replay: input ${i} must be ${s.dtype} ${shapeToString(s.shape)} as captured, got ` +
          `${t.dtype} ${shapeToString(t.shape)} (capture again for new shapes: compile() does)`,
      );
    if (t.device.name !== backend.device.name)
      throw new Error(`replay: input ${i} is on device '${t.device.name}', the capture on '${backend.device.name}'`);
  });
}

let active = false;

/**
 * Run `step(...inputs)` once eagerly on the current backend, recording its kernel calls and allocations: its
 * outputs now, and the {@link Captured} step that replays it. Throws a {@link CaptureError} naming what cannot
 * be captured (see the file comment). `step` returns a tensor or an array of tensors, synchronously.
 * `options.scalars`: the dynamic scalars' values now, host numbers the step's {@link withScalars} calls depend
 * on and each replay passes anew.
 */
export function capture(
  step: (...inputs: Tensor[]) => Tensor | Tensor[],
  inputs: readonly Tensor[],
  options: { scalars?: readonly number[] } = {},
): {
  /** The eager run's outputs. */
  outputs: Tensor[];
  /** The step, to replay on new inputs. */
  captured: Captured;
} {
  if (active) throw new CaptureError('capture: a capture is already running (captures do not nest)');
  if (isGradEnabled())
    throw new CaptureError(
      'capture: grad mode is on, so the step would record autograd nodes; run it under noGrad ' +
        '(training steps cannot be captured yet)',
    );
  const real = getBackend();
  const specs = inputs.map((t, i) => {
    if (!(t instanceof Tensor)) throw new Error(`capture: input ${i} must be a Tensor, got ${typeof t}`);
    return { dtype: t.dtype, shape: t.shape.slice() };
  });
  checkInputs(inputs, specs, real);
  const scalars = options.scalars ?? [];
  if (!Array.isArray(scalars) || !scalars.every(Number.isFinite))
    throw new Error(`capture: options.scalars must be an array of finite numbers, got ${String(scalars)}`);

  const refs = new Map<unknown, Ref>();
  inputs.forEach((t, i) => {
    if (refs.has(t.storage))
      throw new CaptureError(`capture: inputs ${refs.get(t.storage)!.input} and ${i} share storage`);
    refs.set(t.storage, new Ref(i, -1));
  });
  const slots: Slot[] = [];
  const calls: Call[] = [];
  const guards: IdsGuard[] = [];
  const owned: { view: ArrayBufferView; ref: Ref }[] = inputs
    .filter((t) => ArrayBuffer.isView(t.storage))
    .map((t) => ({ view: t.storage as unknown as ArrayBufferView, ref: refs.get(t.storage)! }));

  const newSlot = (storage: Storage, dtype: DType, n: number): Ref => {
    const ref = new Ref(-1, slots.length);
    slots.push({ dtype, n, first: calls.length, last: calls.length - 1 });
    refs.set(storage, ref);
    if (ArrayBuffer.isView(storage)) owned.push({ view: storage as unknown as ArrayBufferView, ref });
    return ref;
  };
  const use = (ref: Ref): Ref => {
    if (ref.slot >= 0) slots[ref.slot].last = calls.length;
    return ref;
  };
  const arg = (v: unknown, depth = 0): unknown => {
    const ref = refs.get(v);
    if (ref) return use(ref);
    if (ArrayBuffer.isView(v)) {
      const inside = owned.find((o) => overlaps(o.view, v));
      if (inside) {
        const whose = inside.ref.input >= 0 ? `input ${inside.ref.input}` : "a step's buffer";
        throw new CaptureError(
          `capture: a kernel got a view into ${whose} (a subarray of its storage): views of captured storage ` +
            'cannot be replayed',
        );
      }
      return v; // storage from before the step (weights, a static cache): by reference
    }
    // Parameter objects (AttentionParams' bias) are rebuilt only where they hold captured storage; anything
    // else (GemmParams, a GPU backend's storage handle from before the step) is kept as it is, by identity.
    if (depth < 3 && Array.isArray(v)) {
      const mapped = v.map((x) => arg(x, depth + 1));
      return mapped.some((x, i) => x !== v[i]) ? mapped : v;
    }
    if (depth < 3 && isPlainObject(v)) {
      const entries = Object.entries(v).map(([k, x]) => [k, arg(x, depth + 1)] as const);
      return entries.some(([k, x]) => x !== v[k]) ? Object.fromEntries(entries) : v;
    }
    return v;
  };
  const record = (what: string, fn: unknown, self: unknown, args: unknown[]): void => {
    const call: Call = { what, fn: fn as Call['fn'], self, args: args.map((a) => arg(a)) };
    if (scalarPatch) call.patch = scalarPatch;
    calls.push(call);
  };

  const dev = real.device;
  const device: Device = {
    name: dev.name,
    alloc(dtype, n, options?: AllocOptions) {
      const s = dev.alloc(dtype, n, options);
      const ref = newSlot(s, dtype, n);
      if (options?.zero ?? true) {
        record('device', dev.fill, dev, [s, dtype, 0, n, 0]);
        void ref;
      }
      return s;
    },
    fromHost(values, dtype) {
      const s = dev.fromHost(values, dtype);
      const n = dtype === 'q4' ? values.length * 2 : values.length;
      newSlot(s, dtype, n);
      record('device', dev.write, dev, [s, dtype, values.slice(), 0]);
      return s;
    },
    write(storage, dtype, values, offset = 0) {
      record('device', dev.write, dev, [storage, dtype, values.slice(), offset]);
      dev.write(storage, dtype, values, offset);
    },
    fill(storage, dtype, value, n, offset = 0) {
      record('device', dev.fill, dev, [storage, dtype, value, n, offset]);
      dev.fill(storage, dtype, value, n, offset);
    },
    copy(src, dst, dtype, n) {
      record('device', dev.copy, dev, [src, dst, dtype, n]);
      dev.copy(src, dst, dtype, n);
    },
    read(storage, dtype, n) {
      if (active) throw new CaptureError("capture: the step reads a tensor's values back (data()); a replay cannot");
      return dev.read(storage, dtype, n);
    },
    readSync(storage, dtype, n) {
      if (active) throw new CaptureError("capture: the step reads a tensor's values on the host (dataSync)");
      return dev.readSync!.call(dev, storage, dtype, n);
    },
    free() {}, // the plan owns what the step allocates
    isPersistent: dev.isPersistent?.bind(dev),
  };
  if (!dev.readSync) delete (device as { readSync?: unknown }).readSync;

  const recorder: Record<string, unknown> = { name: real.name, device };
  const table = real as unknown as Record<KernelName, (...a: unknown[]) => unknown>;
  for (const name of KERNEL_NAMES) {
    const fn = table[name];
    recorder[name] = (...args: unknown[]) => {
      if (name === 'dropoutMask')
        throw new CaptureError(
          'capture: dropout draws random bits on the host at each call (a training-mode module): ' +
            'put the model in eval mode to capture it',
        );
      const kept = name === 'gatherRows' ? args.map((a, i) => (i === 1 ? Int32Array.from(a as Int32Array) : a)) : args;
      record(name, fn, real, kept);
      if (name === 'embedding' || name === 'embeddingInt8' || name === 'embeddingQ4') guard(name, args);
      return fn.apply(real, args);
    };
  }
  const guard = (name: string, args: unknown[]): void => {
    const [table, ids, dim] = name === 'embedding' ? [args[0], args[1], args[3]] : [args[0], args[2], args[4]];
    const ref = refs.get(ids);
    const len = (table as { length?: number }).length;
    if (ref && ref.input >= 0 && typeof len === 'number') {
      const rows = name === 'embeddingQ4' ? (len * 2) / (dim as number) : len / (dim as number);
      guards.push({ input: ref.input, rows, kernel: name });
    }
  };

  active = true;
  capturing = scalars.slice();
  const prevGuard = setHostReadGuard((what) => {
    throw new CaptureError(`capture: the step reads a tensor's values on the host (${what}); a replay cannot`);
  });
  let result: Tensor | Tensor[];
  try {
    result = withBackend(recorder as unknown as Backend, () => step(...inputs));
  } finally {
    active = false;
    capturing = null;
    scalarPatch = null;
    setHostReadGuard(prevGuard);
  }
  if (result instanceof Promise)
    throw new CaptureError('capture: the step must be synchronous (it returned a Promise)');
  const outputs = Array.isArray(result) ? result : [result];
  const outputRefs = outputs.map((t, i) => {
    if (!(t instanceof Tensor)) throw new CaptureError(`capture: the step must return tensors; output ${i} is not one`);
    const ref = refs.get(t.storage);
    if (ref && ref.slot >= 0) slots[ref.slot].last = Number.POSITIVE_INFINITY;
    return { ref: ref ?? t.storage, shape: t.shape.slice(), dtype: t.dtype };
  });
  const captured = new Captured(real, specs, calls, slots, outputRefs, guards, scalars.length);
  captureCounts.captures++;
  return { outputs, captured };
}

/** Whether two host views share any byte of one buffer. */
function overlaps(a: ArrayBufferView, b: ArrayBufferView): boolean {
  return (
    a.buffer === b.buffer && a.byteOffset < b.byteOffset + b.byteLength && b.byteOffset < a.byteOffset + a.byteLength
  );
}

/** A step compiled per input shapes: see {@link compile}. */
export interface CompiledStep {
  /** Outputs of the step on `inputs`: the first call for a set of shapes runs it eagerly and captures it. */
  (...inputs: Tensor[]): Tensor[];
  /** The capture of each set of input shapes held now, by key (`float32[1,4];int32[1,1]`). */
  readonly captures: ReadonlyMap<string, Captured>;
  /** Forget every capture and free its buffers (the next call captures again; earlier outputs are void). */
  clear(): void;
}

/**
 * `step` captured once per set of input dtypes and shapes (at most `maxCaptures`, default 8, the least recently
 * used dropped first, its buffers freed) and replayed afterwards. A replay's outputs are overwritten by the next
 * replay of the same capture (see {@link Captured.replay}); the capturing call's outputs are the eager run's own.
 * `options.scalars`: read at every call, the dynamic scalars' values the call captures or replays with
 * ({@link withScalars}).
 */
export function compile(
  step: (...inputs: Tensor[]) => Tensor | Tensor[],
  options: { maxCaptures?: number; scalars?: () => readonly number[] } = {},
): CompiledStep {
  const max = options.maxCaptures ?? 8;
  if (!Number.isInteger(max) || max < 1) throw new Error(`compile: maxCaptures must be an integer >= 1, got ${max}`);
  const captures = new Map<string, Captured>();
  const run = (...inputs: Tensor[]): Tensor[] => {
    const key = inputs.map((t) => (t instanceof Tensor ? `${t.dtype}${shapeToString(t.shape)}` : typeof t)).join(';');
    const hit = captures.get(key);
    if (hit) {
      captures.delete(key);
      captures.set(key, hit);
      return hit.replay(inputs, options.scalars?.());
    }
    const { outputs, captured } = capture(step, inputs, { scalars: options.scalars?.() });
    captures.set(key, captured);
    if (captures.size > max) {
      const oldest = captures.keys().next().value as string;
      captures.get(oldest)!.release();
      captures.delete(oldest);
    }
    return outputs;
  };
  const clear = (): void => {
    for (const c of captures.values()) c.release();
    captures.clear();
  };
  return Object.assign(run, { captures: captures as ReadonlyMap<string, Captured>, clear });
}
