/** Tiny DOM helpers: no framework. */

type Child = Node | string | null | undefined | false;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | number | boolean | undefined> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === false) continue;
    if (k === 'text') el.textContent = String(v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children) if (c !== null && c !== undefined && c !== false) el.append(c);
  return el;
}

export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (!el) throw new Error(`no element #${id}`);
  return el as T;
}

/** A labelled control: <label>text <control></label>. */
export function field(label: string, control: HTMLElement): HTMLLabelElement {
  return h('label', { class: 'field' }, h('span', { text: label }), control);
}

export function select(id: string, options: readonly (readonly [string, string])[], value?: string): HTMLSelectElement {
  const s = h('select', { id, 'data-testid': id });
  for (const [v, t] of options) s.append(h('option', { value: v, text: t }));
  if (value !== undefined) s.value = value;
  return s;
}

export function setOptions(s: HTMLSelectElement, options: readonly (readonly [string, string])[], keep = true): void {
  const prev = s.value;
  s.replaceChildren(...options.map(([v, t]) => h('option', { value: v, text: t })));
  if (keep && options.some(([v]) => v === prev)) s.value = prev;
}

/** Let the browser paint (e.g. a "working…" message) before a long synchronous task. */
export function nextFrame(): Promise<void> {
  return new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
}

export interface FormWork {
  button: HTMLButtonElement;
  /** Where a thrown error's message is shown (hidden when the work succeeds). */
  error: HTMLElement;
  /** False: the submit does nothing (e.g. no model yet). */
  ready(): boolean;
  /** Before the work, e.g. a "working…" message (painted before the work starts). */
  start(): void;
  /** The work: a model run in the model worker, awaited. */
  work(): Promise<void> | void;
  /** When the work threw (or was cancelled), before its message is shown. */
  fail(): void;
  /** What the progress line says while the work runs ('translating'). */
  doing: string;
  /** Stop the work (the Cancel button). */
  cancel(): void;
}

/** Work that runs longer than this shows its progress and a Cancel button. */
export const PROGRESS_AFTER_MS = 500;

/**
 * Run a form's work on submit, its button disabled meanwhile, errors shown in `error`. After half
 * a second a progress line (role=status) says how long the work has run, beside a Cancel button.
 */
export function onSubmit(form: HTMLFormElement, o: FormWork): void {
  const cancel = h('button', { type: 'button', class: 'small cancel', text: 'Cancel' });
  const text = h('span', { class: 'muted' });
  const progress = h('span', { class: 'progress', role: 'status', hidden: true }, text, ' ', cancel);
  o.button.after(progress);
  cancel.addEventListener('click', () => o.cancel());
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    if (!o.ready() || o.button.disabled) return;
    o.error.hidden = true;
    o.button.disabled = true;
    o.start();
    const t0 = performance.now();
    const tick = () => {
      const ms = performance.now() - t0;
      if (ms < PROGRESS_AFTER_MS) return;
      text.textContent = `${o.doing}… ${(ms / 1000).toFixed(1)} s`;
      progress.hidden = false;
    };
    const timer = setInterval(tick, 100);
    await nextFrame();
    try {
      await o.work();
    } catch (x) {
      o.fail();
      const cancelled = (x as Error).name === 'Cancelled';
      o.error.textContent = cancelled
        ? `Cancelled after ${((performance.now() - t0) / 1000).toFixed(1)} s.`
        : (x as Error).message;
      o.error.hidden = false;
    } finally {
      clearInterval(timer);
      progress.hidden = true;
      o.button.disabled = false;
    }
  });
}
