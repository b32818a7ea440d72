/**
 * The registry of backends: which are registered, which one ops run on, how one that loads asynchronously
 * is loaded, and QKV_BACKEND. The kernel contract itself is contract.ts, re-exported here so that every
 * caller imports both from this file.
 */
import { registerDeviceName, setDefaultDevice } from '../tensor/storage.ts';
import type { Backend } from './contract.ts';

export * from './contract.ts';

const registry = new Map<string, Backend>();
let current: Backend | null = null;

/** Add a backend to the registry under its name; the first one registered becomes the current backend. */
export function registerBackend(backend: Backend): void {
  registry.set(backend.name, backend);
  registerDeviceName(backend.name, backend.device);
  if (current === null) use(backend);
}

function use(b: Backend): void {
  current = b;
  setDefaultDevice(b.device);
}

/**
 * Run `fn` with `b` as the current backend and its device as the default one, then restore the backend before:
 * the hook the capture recorder of src/compile runs a step through (`b` is not registered).
 */
export function withBackend<T>(b: Backend, fn: () => T): T {
  const prev = current;
  use(b);
  try {
    return fn();
  } finally {
    if (prev !== null) use(prev);
  }
}

const loaders = new Map<string, () => Promise<Backend | null>>();

/**
 * How backend `name` loads where it is not registered at import (the wasm module in a browser, a GPU
 * adapter): `setBackend(name)` awaits it once, then registers what it gives (null: it cannot run here).
 */
export function registerLoader(name: string, load: () => Promise<Backend | null>): void {
  loaders.set(name, load);
}

/**
 * Switch backends by name ('js', 'wasm', or one registered later): ops on tensors of its device run its
 * kernels, and new tensors are made on its device. Tensors made before stay where they are (`t.to(name)`,
 * `module.to(name)` move them). A registered backend is switched to at once (no need to await); one that
 * loads asynchronously (see {@link registerLoader}) is switched to when the returned promise resolves,
 * which rejects naming why it could not load. An unknown name throws at once.
 */
export function setBackend(name: string): Promise<void> {
  const b = registry.get(name);
  if (b) {
    use(b);
    return Promise.resolve();
  }
  const load = loaders.get(name);
  if (!load) {
    const known = [...new Set([...registry.keys(), ...loaders.keys()])].join(', ');
    throw new Error(`setBackend: unknown backend '${name}', registered: ${known}`);
  }
  return load().then((loaded) => {
    if (!loaded) throw new Error(`setBackend: the ${name} backend did not load here`);
    if (!registry.has(name)) registerBackend(loaded);
    use(loaded);
  });
}

/** The backend ops run on now; throws if none is registered, or QKV_BACKEND named a backend that cannot run. */
export function getBackend(): Backend {
  if (envError !== null) throw new Error(envError);
  if (stillLoading !== null) throw new Error(stillLoading);
  if (current === null) throw new Error('getBackend: no backend registered');
  return current;
}

let envError: string | null = null;
/** Set while QKV_BACKEND's backend loads asynchronously (see backendReady). */
let stillLoading: string | null = null;
let starting: Promise<void> = Promise.resolve();

/**
 * Resolves when the backend QKV_BACKEND asked for has loaded (at once for js and wasm; a GPU backend loads
 * asynchronously, and ops before then throw saying to await this). Rejects with the one-line reason if it
 * cannot load. The CLI awaits it before any command.
 */
export function backendReady(): Promise<void> {
  return starting;
}

/** A bad environment variable, in one line: the first op throws it (see getBackend). The first one reported wins. */
export function reportEnvError(message: string): void {
  envError ??= message;
}

/**
 * QKV_BACKEND from the environment (Node), read here only: the backend the process should start on, or
 * undefined for the default (the fastest that loads).
 */
export function requestedBackend(): string | undefined {
  return (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env?.QKV_BACKEND;
}

/**
 * After the backends of `names` registered themselves (src/backend/backends.ts): start on QKV_BACKEND's choice,
 * else on the first of `preferred` that is registered. A bad QKV_BACKEND is one line, thrown by the first
 * op (so the CLI prints it as an error, not a stack trace at import).
 */
export function chooseStartingBackend(
  names: readonly string[],
  preferred: readonly string[],
  why: (name: string) => string | null,
): void {
  const requested = requestedBackend();
  if (requested !== undefined && requested !== '') {
    if (!names.includes(requested)) {
      envError ??= `QKV_BACKEND=${requested}: unknown backend (expected one of ${names.join(', ')})`;
      return;
    }
    if (!registry.has(requested) && loaders.has(requested) && why(requested) === null) {
      stillLoading = `QKV_BACKEND=${requested}: the ${requested} backend loads asynchronously: await backendReady()`;
      starting = setBackend(requested).then(
        () => {
          stillLoading = null;
        },
        (e: unknown) => {
          stillLoading = null;
          const reason = why(requested) ?? (e as Error).message;
          envError ??= `QKV_BACKEND=${requested}, but the ${requested} backend did not load: ${reason}`;
          throw new Error(envError);
        },
      );
      starting.catch(() => {}); // reported by getBackend and backendReady, not as an unhandled rejection
      return;
    }
    if (!registry.has(requested)) {
      const reason = why(requested) ?? 'not loaded';
      envError ??= `QKV_BACKEND=${requested}, but the ${requested} backend did not load: ${reason}`;
      return;
    }
    setBackend(requested);
    return;
  }
  const first = preferred.find((n) => registry.has(n));
  if (first) setBackend(first);
}

/** Names of the registered backends, in registration order. */
export function backendNames(): string[] {
  return [...registry.keys()];
}
