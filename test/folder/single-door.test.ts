/**
 * One door to model folders (issue 38, point 1): no file outside src/folder/ opens or writes a
 * model folder's files by name. The folder module's FILES constant is the one place those names
 * are code; everything else asks src/folder (folderKindOf, readSeq2Seq, readLm, saveModelDir,
 * copyFolderFiles, saveFolderWeights, ...) or uses FILES.
 *
 * The rule, exactly: in every .ts/.tsx/.js/.mjs file under src/, web/src/, bench/ and scripts/
 * outside src/folder/, once comments are removed, no string literal ('…', "…" or a template
 * literal's text) may be one of the names config.json, tokenizer.json, target_tokenizer.json,
 * model.safetensors, or end in '/' + such a name (a path built by hand). A name inside a longer
 * string (an error message, --help text: "its config.json names an ensemble") is prose and
 * allowed: it names the file to a person, it opens nothing.
 *
 * PENDING lists files that break the rule today and are owned by work in progress elsewhere (the
 * training-loop rewrite, the explorer rework); each entry says what remains. LABELS lists files
 * where a whole-literal name is a default label in error messages, not a path (src/models cannot
 * import src/folder: the folder module imports the models).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { FILES } from '../../src/folder/spec.ts';

const NAMES = [FILES.config, FILES.tokenizer, FILES.targetTokenizer, FILES.weights];
const ROOTS = ['src', 'web/src', 'bench', 'scripts'];

const PENDING: Record<string, string> = {};

const LABELS: Record<string, string> = {
  'src/models/config-check.ts': "checkVocabularies' default file names for its messages",
  'src/models/load-weights.ts': "loadWeights' default config name for its messages",
};
const pending = (f: string) => Object.hasOwn(PENDING, f);

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return name === 'node_modules' || name === 'dist' ? [] : walk(p);
    return /\.(ts|tsx|js|mjs)$/.test(name) ? [p] : [];
  });
}

/**
 * The string literals of a JavaScript/TypeScript source, comments skipped. A small scanner, not a
 * parser: a '/' that starts a regular expression is taken for division, which is harmless here (a
 * regex holding a quote would confuse it; none of the scanned files has one that matters, and the
 * self-test below pins the cases that do occur).
 */
export function stringLiterals(src: string): string[] {
  const out: string[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i];
    if (c === '/' && src[i + 1] === '/') {
      while (i < src.length && src[i] !== '\n') i++;
    } else if (c === '/' && src[i + 1] === '*') {
      const end = src.indexOf('*/', i + 2);
      i = end < 0 ? src.length : end + 2;
    } else if (c === '/' && /[(,=:[!&|?{};]\s*$/.test(src.slice(Math.max(0, i - 20), i))) {
      // A regular expression literal: skip it (its text is a pattern, not a string).
      i++;
      let cls = false;
      while (i < src.length && src[i] !== '\n') {
        if (src[i] === '\\') i++;
        else if (src[i] === '[') cls = true;
        else if (src[i] === ']') cls = false;
        else if (src[i] === '/' && !cls) break;
        i++;
      }
      i++;
    } else if (c === "'" || c === '"' || c === '`') {
      let s = '';
      i++;
      while (i < src.length && src[i] !== c) {
        if (src[i] === '\\') {
          s += src[i + 1];
          i += 2;
        } else if (c === '`' && src[i] === '$' && src[i + 1] === '{') {
          // A template's ${…}: its text so far is one literal part; the expression is scanned as code.
          out.push(s);
          s = '';
          let depth = 1;
          const start = i + 2;
          i += 2;
          while (i < src.length && depth > 0) {
            if (src[i] === '{') depth++;
            else if (src[i] === '}') depth--;
            i++;
          }
          out.push(...stringLiterals(src.slice(start, i - 1)));
        } else {
          s += src[i];
          i++;
        }
      }
      out.push(s);
      i++;
    } else {
      i++;
    }
  }
  return out;
}

/** The folder file names a source uses as code (a whole literal, or a path ending in one). */
export function namesUsedAsCode(src: string): string[] {
  return stringLiterals(src).filter((s) => NAMES.some((n) => s === n || s.endsWith(`/${n}`)));
}

test('the scanner: whole literals and hand-built paths count; comments and prose do not', () => {
  assert.deepEqual(namesUsedAsCode("join(dir, 'config.json')"), ['config.json']);
  // biome-ignore lint/suspicious/noTemplateCurlyInString: the scanner's input is source text.
  assert.deepEqual(namesUsedAsCode('readFileSync(`${dir}/model.safetensors`)'), ['/model.safetensors']);
  assert.deepEqual(namesUsedAsCode('x = "tokenizer.json"; y = `target_tokenizer.json`'), [
    'tokenizer.json',
    'target_tokenizer.json',
  ]);
  assert.deepEqual(namesUsedAsCode("// join(dir, 'config.json')\n/* 'model.safetensors' */ f()"), []);
  // biome-ignore lint/suspicious/noTemplateCurlyInString: the scanner's input is source text.
  assert.deepEqual(namesUsedAsCode('throw new Error(`${path}: its config.json names an ensemble`)'), []);
  assert.deepEqual(namesUsedAsCode(".option('--model <dir>', 'folder whose tokenizer.json encodes the text')"), []);
  assert.deepEqual(namesUsedAsCode("s.replace(/'/g, '') + join(d, 'config.json')"), ['config.json']);
  assert.deepEqual(namesUsedAsCode("const a = 'it\\'s'; join(d, \"model.safetensors\")"), ['model.safetensors']);
});

test('no file outside src/folder/ names a model folder file as code (config.json, tokenizer.json, target_tokenizer.json, model.safetensors)', () => {
  const offenders: string[] = [];
  for (const root of ROOTS) {
    for (const f of walk(root)) {
      const rel = f.split('\\').join('/');
      if (rel.startsWith('src/folder/') || pending(rel) || Object.hasOwn(LABELS, rel)) continue;
      const used = namesUsedAsCode(readFileSync(f, 'utf8'));
      if (used.length > 0) offenders.push(`${rel}: ${used.map((u) => JSON.stringify(u)).join(', ')}`);
    }
  }
  assert.deepEqual(
    offenders,
    [],
    `open or write these through src/folder (FILES, folder/node.ts):\n${offenders.join('\n')}`,
  );
});

test('the listed exceptions exist (a renamed file must not keep an exception it no longer needs by accident)', () => {
  for (const f of [...Object.keys(PENDING), ...Object.keys(LABELS)]) assert.ok(statSync(f).isFile(), f);
});
