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
  /** The long synchronous task. */
  work(): void;
  /** When the work threw, before its message is shown. */
  fail(): void;
}

/** Run a form's work on submit, its button disabled meanwhile, errors shown in `error`. */
export function onSubmit(form: HTMLFormElement, o: FormWork): void {
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    if (!o.ready()) return;
    o.error.hidden = true;
    o.button.disabled = true;
    o.start();
    await nextFrame();
    try {
      o.work();
    } catch (x) {
      o.fail();
      o.error.textContent = (x as Error).message;
      o.error.hidden = false;
    } finally {
      o.button.disabled = false;
    }
  });
}
