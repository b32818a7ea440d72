/**
 * The page's side of the model worker (model-worker.ts): `runner.call(op, args, progress)` sends a
 * request and resolves with its answer (rejects with its error's message). `runner.cancel()` ends
 * the worker, and every request it had rejects with {@link Cancelled}; a new worker starts at once,
 * chooses its backend as the first did and opens again the models the views had, so the page goes
 * on with the same models. `runner.switchBackend(pref)` does the same with another backend (the
 * switch). Each answered request leaves a performance measure named `qkv:<op>` (from its sending to
 * its answer's arrival): the time a model ran while the page went on.
 */
import type { ReplyMessage, RequestMessage, RequestName, Requests, ThreadStats } from './model-worker.ts';

/** What a cancelled request rejects with. */
export class Cancelled extends Error {
  constructor() {
    super('cancelled');
    this.name = 'Cancelled';
  }
}

interface Pending {
  resolve(v: unknown): void;
  reject(e: Error): void;
  progress?: (s: string) => void;
  /** The request's name and when it was sent, for its performance measure. */
  op: RequestName;
  start: number;
}

/** What a new worker must be told again: each view's model, and the prompt the next-token view draws from. */
type Slot = 'translate' | 'generate' | 'nextToken';

class Runner {
  private worker: Worker | null = null;
  private next = 1;
  private readonly pending = new Map<number, Pending>();
  private init: RequestMessage<'init'> | null = null;
  /** Each view's last model open and the next-token prompt: sent again, in order, to a new worker after a cancel. */
  private readonly opens = new Map<Slot, RequestMessage>();
  /** The wasm thread pool's count in the worker, as of its last answer (null: none yet). */
  threads: ThreadStats | null = null;
  /** Called when `threads` changes. */
  onThreads: (() => void) | null = null;

  private start(): Worker {
    const w = new Worker(new URL('./model-worker.ts', import.meta.url), { type: 'module', name: 'qkv-models' });
    w.onmessage = (e: MessageEvent<ReplyMessage>) => {
      const m = e.data;
      const p = this.pending.get(m.id);
      if (!p) return;
      if ('progress' in m) p.progress?.(m.progress);
      else {
        this.pending.delete(m.id);
        if ('threads' in m) {
          this.threads = m.threads;
          this.onThreads?.();
        }
        performance.measure(`qkv:${p.op}`, { start: p.start, end: performance.now() });
        // Settled in a task of its own: what the page draws from the answer is not part of the model's run.
        setTimeout(() => ('error' in m ? p.reject(new Error(m.error)) : p.resolve(m.value)), 0);
      }
    };
    w.onerror = (e) => {
      // A worker that fails to start or throws outside a request: every request it had fails.
      const err = new Error(`the model worker failed: ${e.message || 'it could not start'}`);
      for (const p of this.pending.values()) p.reject(err);
      this.pending.clear();
    };
    this.worker = w;
    return w;
  }

  private send(m: RequestMessage): void {
    (this.worker ?? this.start()).postMessage(m);
  }

  call<K extends RequestName>(
    op: K,
    args: Requests[K]['args'],
    progress?: (s: string) => void,
  ): Promise<Requests[K]['value']> {
    const m = { id: this.next++, op, args } as RequestMessage;
    if (op === 'init') this.init = m as RequestMessage<'init'>;
    const start = performance.now();
    return new Promise<Requests[K]['value']>((resolve, reject) => {
      this.pending.set(m.id, { resolve: resolve as (v: unknown) => void, reject, progress, op, start });
      this.send(m);
    }).then((v) => {
      if (op === 'openServed') this.remember((args as Requests['openServed']['args']).view, m);
      if (op === 'openLocal') this.remember('generate', m);
      if (op === 'openLocalTranslation') this.remember('translate', m);
      if (op === 'nextToken') this.remember('nextToken', m);
      return v;
    });
  }

  private remember(slot: Slot, m: RequestMessage): void {
    // A new GPT has no prompt yet; what is remembered last is sent last (the prompt after its model).
    if (slot === 'generate') this.opens.delete('nextToken');
    this.opens.delete(slot);
    this.opens.set(slot, m);
  }

  /** End the running work: its requests (and those after it) reject with Cancelled; the models are opened again. */
  cancel(): void {
    this.restart(null);
  }

  /**
   * Another backend: the worker ends as on a cancel (its requests reject with Cancelled, training runs are
   * lost) and a new one starts on `pref`, opening again the models the views had. Resolves with the new choice.
   */
  switchBackend(pref: Requests['init']['args']['pref']): Promise<Requests['init']['value']> {
    if (!this.init) throw new Error('switchBackend: the model worker has not started');
    this.init = { ...this.init, args: { ...this.init.args, pref } };
    return new Promise((resolve, reject) => this.restart({ resolve: resolve as (v: unknown) => void, reject }));
  }

  /** A new worker: the init (answered to `initAnswer`, if given), then the models; their answers are not waited for. */
  private restart(initAnswer: Pick<Pending, 'resolve' | 'reject'> | null): void {
    this.worker?.terminate();
    this.worker = null;
    const was = [...this.pending.values()];
    this.pending.clear();
    for (const p of was) p.reject(new Cancelled());
    for (const m of [this.init, ...this.opens.values()]) {
      if (!m) continue;
      const again = { ...m, id: this.next++ };
      const answer = m === this.init && initAnswer ? initAnswer : { resolve: () => {}, reject: () => {} };
      this.pending.set(again.id, { ...answer, op: again.op, start: performance.now() });
      this.send(again);
    }
  }
}

export const runner = new Runner();
