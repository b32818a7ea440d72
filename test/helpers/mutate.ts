/**
 * Structured fuzzing of JSON documents (tokenizer.json, config.json): seeded, one to three random
 * edits per input: a value replaced by an odd one (wrong type, negative, huge, fractional, NaN-like
 * strings), a key deleted or added, an array element dropped or duplicated, or the text itself cut
 * or with a byte changed.
 */
import { rng } from './random.ts';

const ODD: unknown[] = [
  null,
  true,
  false,
  0,
  -1,
  1,
  2,
  3,
  0.5,
  -0.5,
  7,
  255,
  1e9,
  2 ** 31,
  2 ** 53,
  1e308,
  -1e308,
  '',
  'x',
  '<unk>',
  '<pad>',
  '▁',
  '▁a',
  'a b',
  ' ',
  '\n',
  'BPE',
  'Metaspace',
  'relu',
  'gelu',
  'qkv-chars',
  '__proto__',
  [],
  [1, 2],
  ['a', 'b'],
  [null],
  {},
  { a: 1 },
  { type: 'BPE' },
];

type Json = unknown;

/** Every (container, key) in the document, the root's children first. */
function slots(doc: Json): [Record<string, unknown> | unknown[], string | number][] {
  const out: [Record<string, unknown> | unknown[], string | number][] = [];
  const walk = (v: Json) => {
    if (Array.isArray(v))
      v.forEach((x, i) => {
        out.push([v, i]);
        walk(x);
      });
    else if (v !== null && typeof v === 'object')
      for (const k of Object.keys(v)) {
        out.push([v as Record<string, unknown>, k]);
        walk((v as Record<string, unknown>)[k]);
      }
  };
  walk(doc);
  return out;
}

export interface Mutator {
  /** A mutated copy of `doc` (an object), or a mutated JSON text (a string) for text-level edits. */
  next(doc: Json): Json | string;
}

export function mutator(seed: number): Mutator {
  const r = rng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];
  // A fresh copy of an odd value each time (they are shared constants; an edit must not change them).
  const odd = (): unknown => JSON.parse(JSON.stringify(pick(ODD)));
  return {
    next(doc: Json): Json | string {
      if (r() < 0.1) {
        const text = JSON.stringify(doc);
        if (r() < 0.5) return text.slice(0, Math.floor(r() * text.length));
        const i = Math.floor(r() * text.length);
        return text.slice(0, i) + String.fromCharCode(32 + Math.floor(r() * 95)) + text.slice(i + 1);
      }
      const copy = JSON.parse(JSON.stringify(doc)) as Json;
      const edits = 1 + Math.floor(r() * 3);
      for (let e = 0; e < edits; e++) {
        const all = slots(copy);
        if (all.length === 0) break;
        // Favour the top of the document (few slots) as much as the many leaves of a vocabulary.
        const [box, key] = r() < 0.5 ? pick(all.slice(0, 40)) : pick(all);
        const kind = r();
        if (kind < 0.6) {
          (box as Record<string | number, unknown>)[key] = odd();
        } else if (kind < 0.75) {
          if (Array.isArray(box)) box.splice(key as number, 1);
          else delete box[key as string];
        } else if (kind < 0.85) {
          if (Array.isArray(box)) box.push(box[key as number]);
          else box[`${String(key)}${Math.floor(r() * 3)}`] = odd();
        } else if (kind < 0.95) {
          // A numeric leaf nudged: off by one, negated, scaled.
          const v = (box as Record<string | number, unknown>)[key];
          if (typeof v === 'number')
            (box as Record<string | number, unknown>)[key] = pick([v + 1, v - 1, -v, v * 1000, v / 2]);
          else (box as Record<string | number, unknown>)[key] = odd();
        } else {
          // Two slots swap values.
          const [box2, key2] = pick(all);
          // Copies, so that a value never ends up inside itself.
          const clone = (v: unknown) => (v === undefined ? v : JSON.parse(JSON.stringify(v)));
          const a = clone((box as Record<string | number, unknown>)[key]);
          const b = clone((box2 as Record<string | number, unknown>)[key2]);
          (box as Record<string | number, unknown>)[key] = b;
          (box2 as Record<string | number, unknown>)[key2] = a;
        }
      }
      return copy;
    },
  };
}

/** Run `body` on `count` mutations of `doc`; returns how many gave a result and how many a clear error, and the slowest input. */
export function fuzz(
  count: number,
  seed: number,
  doc: Json,
  body: (input: Json | string) => void,
  clear: RegExp,
): { ok: number; errors: number; slowestMs: number } {
  const m = mutator(seed);
  let ok = 0;
  let errors = 0;
  let slowestMs = 0;
  for (let i = 0; i < count; i++) {
    const input = m.next(doc);
    const t0 = performance.now();
    try {
      body(input);
      ok++;
    } catch (e) {
      const msg = e instanceof Error ? `${e.constructor.name}: ${e.message}` : String(e);
      if (!(e instanceof Error) || !clear.test(e.message)) {
        throw new Error(
          `input ${i} (seed ${seed}) gave an unclear error: ${msg}\ninput: ${JSON.stringify(input).slice(0, 600)}`,
        );
      }
      errors++;
    }
    slowestMs = Math.max(slowestMs, performance.now() - t0);
  }
  return { ok, errors, slowestMs };
}
