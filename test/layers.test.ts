/**
 * The house's import rules (issue 39, point 4; ../shared/DESIGN.md "Layers, bottom to top"), drawn
 * from the code's own imports:
 *
 * 1. No import circle between files of src/ (type-only imports count: a circle of types is still a
 *    circle for whoever reads the code).
 * 2. Data flows one way: a file in one folder of src/ imports from another folder only if that folder
 *    sits lower in LAYERS. Folders on the same rank are siblings and do not import each other.
 *
 * Imports are read with TypeScript's own pre-processor (`ts.preProcessFile`), which sees static
 * imports, re-exports and `import('…')` with a literal specifier; a specifier built at run time (the
 * pipelines' Node-only import of src/folder/node.ts) is not an edge, and goes down anyway.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import ts from 'typescript';

/** Each folder of src/ and its rank: a folder imports only from folders of a lower rank. */
export const LAYERS: Record<string, number> = {
  util: 0,
  tensor: 1,
  backend: 2,
  autograd: 3,
  ops: 4,
  compile: 4, // capture and replay: under decode, beside ops (it records the backend's kernels, not ops)
  nn: 5,
  models: 6,
  optim: 7,
  data: 7,
  text: 7,
  io: 7,
  decode: 8,
  folder: 9,
  train: 10,
  pipelines: 10,
  server: 10,
  viz: 11, // over pipelines: the explorer's fill-mask runs the pipeline's own code
  cli: 12,
  '.': 13, // src/index.ts, the library's entry
};

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return walk(p);
    return /\.ts$/.test(name) && !name.endsWith('.d.ts') ? [p] : [];
  });
}

/** Every src/ file and the src/ files it imports (relative specifiers only: packages are not layers). */
export function importGraph(root = 'src'): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of walk(root)) {
    const info = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
    const deps = info.importedFiles
      .map((f) => f.fileName)
      .filter((s) => s.startsWith('.'))
      .map((s) => normalize(join(dirname(file), s)).replace(/\.js$/, '.ts'));
    graph.set(normalize(file), [...new Set(deps)]);
  }
  return graph;
}

/** The folder of src/ a file belongs to ('.' for a file directly in src/). */
export function layerOf(file: string, root = 'src'): string {
  const rel = relative(root, file);
  return rel.includes('/') ? rel.split('/')[0]! : '.';
}

/** The circles of a graph: its strongly connected components with more than one file (or a self-import). */
export function circles(graph: Map<string, string[]>): string[][] {
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const on = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string): void => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    on.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const comp: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        on.delete(w);
        comp.push(w);
      } while (w !== v);
      if (comp.length > 1 || (graph.get(v) ?? []).includes(v)) out.push(comp.sort());
    }
  };
  for (const v of graph.keys()) if (!idx.has(v)) visit(v);
  return out;
}

/** The imports that go up or sideways: "from → to (layer rank → layer rank)". */
export function upwardImports(graph: Map<string, string[]>, layers = LAYERS, root = 'src'): string[] {
  const bad: string[] = [];
  for (const [from, deps] of graph) {
    const a = layerOf(from, root);
    for (const to of deps) {
      const b = layerOf(to, root);
      if (a === b) continue;
      const ra = layers[a];
      const rb = layers[b];
      if (ra === undefined || rb === undefined || rb >= ra)
        bad.push(`${from} → ${to} (${a} ${ra ?? 'unranked'} → ${b} ${rb ?? 'unranked'})`);
    }
  }
  return bad;
}

test('the checks catch what they look for: a circle, an import going up, a sibling import', () => {
  const g = new Map([
    ['src/a/x.ts', ['src/a/y.ts']],
    ['src/a/y.ts', ['src/b/z.ts']],
    ['src/b/z.ts', ['src/a/x.ts']],
    ['src/b/w.ts', []],
  ]);
  assert.deepEqual(circles(g), [['src/a/x.ts', 'src/a/y.ts', 'src/b/z.ts']]);
  assert.deepEqual(upwardImports(g, { a: 2, b: 1 }), ['src/b/z.ts → src/a/x.ts (b 1 → a 2)']);
  assert.deepEqual(upwardImports(new Map([['src/a/x.ts', ['src/b/w.ts']]]), { a: 1, b: 1 }), [
    'src/a/x.ts → src/b/w.ts (a 1 → b 1)',
  ]);
  const parsed = ts.preProcessFile(
    "import type { A } from './a.ts';\nexport * from '../b/c.ts';\nawait import('./d.ts');",
    true,
    true,
  );
  assert.deepEqual(
    parsed.importedFiles.map((f) => f.fileName),
    ['./a.ts', '../b/c.ts', './d.ts'],
  );
});

test('src/ has no import circle', () => {
  const found = circles(importGraph());
  assert.deepEqual(found, [], `import circles:\n${found.map((c) => c.join(' → ')).join('\n')}`);
});

test("every folder of src/ is ranked, and src/'s imports only go down the layers", () => {
  const folders = readdirSync('src').filter((n) => statSync(join('src', n)).isDirectory());
  assert.deepEqual(
    folders.filter((f) => !(f in LAYERS)),
    [],
    'a new folder of src/ needs its rank in LAYERS',
  );
  const bad = upwardImports(importGraph());
  assert.deepEqual(bad, [], `imports that do not go down:\n${bad.join('\n')}`);
});
