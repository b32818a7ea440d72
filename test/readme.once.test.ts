/**
 * Every code block of README.md works as written.
 *
 * - A ```ts or ```js block runs: it is written to a file in a temporary folder inside the repository,
 *   its `from 'qkv'` pointed at src/index.ts (what the package exports), and run from the repository's
 *   root with `node --import tsx` (so `models/...` paths are the shipped folders); it must exit 0. The
 *   ```ts blocks must also type-check against the sources (strict, as a TypeScript user compiles them).
 * - A ```sh block is not run (it installs, trains, serves): each command it names must exist. `npm run
 *   NAME` / `npm start` / `npm test` need that script in package.json; `qkv ...`, `npx qkv ...`, `npm
 *   run qkv -- ...` need the command in `qkv --help` and every `--flag` in that command's `--help`
 *   (`npm start -- ...` passes its flags to `qkv explore`); `node FILE` needs the file.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const readme = readFileSync(join(root, 'README.md'), 'utf8');

interface Block {
  lang: string;
  line: number;
  code: string;
}

/** The fenced blocks of a Markdown text, with their language and the line their fence opens on. */
function codeBlocks(markdown: string): Block[] {
  const blocks: Block[] = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = lines[i].match(/^```(\S*)\s*$/);
    if (!open) continue;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && !/^```\s*$/.test(lines[i]); i++) body.push(lines[i]);
    assert.ok(i < lines.length, `README.md:${start + 1}: a code block that is never closed`);
    blocks.push({ lang: open[1], line: start + 1, code: body.join('\n') });
  }
  return blocks;
}

const blocks = codeBlocks(readme);
const runnable = blocks.filter((b) => b.lang === 'ts' || b.lang === 'js');
const shell = blocks.filter((b) => b.lang === 'sh' || b.lang === 'bash');

test('README.md has code blocks of each kind to check', () => {
  assert.ok(runnable.length >= 2, `expected ts/js blocks, found ${runnable.length}`);
  assert.ok(shell.length >= 2, `expected sh blocks, found ${shell.length}`);
  const unknown = blocks.filter((b) => !['ts', 'js', 'sh', 'bash', '', 'text'].includes(b.lang));
  assert.deepEqual(
    unknown.map((b) => `${b.lang} at line ${b.line}`),
    [],
    'a block of a language this test does not check',
  );
});

/** The block's source with `from 'qkv'` (and `import('qkv')`) pointing at the repository's sources. */
function toSource(code: string, dir: string): string {
  const entry = relative(dir, join(root, 'src', 'index.ts'))
    .split('\\')
    .join('/');
  return code.replace(/(from\s+|import\s*\(\s*)(['"])qkv\2/g, `$1'${entry.startsWith('.') ? entry : `./${entry}`}'`);
}

const tmp = mkdtempSync(join(root, '.readme-blocks-'));
process.on('exit', () => rmSync(tmp, { recursive: true, force: true }));
const files = runnable.map((b) => {
  const file = join(tmp, `block-line-${b.line}.ts`);
  writeFileSync(file, `${toSource(b.code, tmp)}\n`);
  return { block: b, file };
});

for (const { block, file } of files) {
  test(`README.md:${block.line}: the ${block.lang} block runs and exits 0`, () => {
    const r = spawnSync(process.execPath, ['--import', 'tsx', file], { cwd: root, encoding: 'utf8', timeout: 300_000 });
    assert.equal(r.error, undefined, `README.md:${block.line}: ${r.error?.message}`);
    assert.equal(
      r.status,
      0,
      `README.md:${block.line}: exit status ${r.status}\n--- block ---\n${block.code}\n--- stderr ---\n${r.stderr}\n--- stdout ---\n${r.stdout}`,
    );
  });
}

test('README.md: the ts blocks type-check (strict) against the sources', () => {
  const ts = files.filter((f) => f.block.lang === 'ts');
  const config = join(tmp, 'tsconfig.json');
  writeFileSync(
    config,
    JSON.stringify({
      extends: relative(tmp, join(root, 'tsconfig.json')).split('\\').join('/'),
      compilerOptions: { noEmit: true },
      include: [],
      files: ts.map((f) => relative(tmp, f.file).split('\\').join('/')),
    }),
  );
  const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
  const r = spawnSync(process.execPath, [tsc, '-p', config], { cwd: root, encoding: 'utf8', timeout: 300_000 });
  // tsc names the temporary file: say which README line it is.
  const out = `${r.stdout}${r.stderr}`.replace(
    /[^\s(]*block-line-(\d+)\.ts\((\d+),(\d+)\)/g,
    (_m, line, row, col) => `README.md:${Number(line) + Number(row)}:${col}`,
  );
  assert.equal(r.status, 0, out);
});

// ---- links: every relative link of the README and the guides leads to a file (and heading) ----

/** GitHub's anchor for a heading: lower case, punctuation dropped (letters, digits, _ and - kept), spaces to -. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/`/g, '')
    .replace(/[^\p{L}\p{N}_\- ]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors of a Markdown file's headings (outside code blocks), duplicates numbered as GitHub does. */
function anchorsOf(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  let fence = false;
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) fence = !fence;
    const h = !fence && line.match(/^#{1,6}\s+(.*)$/);
    if (!h) continue;
    const base = slug(h[1]);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** Problems of the relative links `[text](target)` of one Markdown file of the repository. */
function brokenLinks(file: string): string[] {
  const text = readFileSync(join(root, file), 'utf8').replace(/```[\s\S]*?```/g, (m) => m.replace(/[^\n]/g, ''));
  const problems: string[] = [];
  for (const [i, line] of text.split('\n').entries()) {
    for (const m of line.matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = m[1];
      if (/^[a-z]+:/i.test(target)) continue; // https:, mailto:
      const [path, anchor] = target.split('#');
      const dest = path === '' ? join(root, file) : join(root, file, '..', path);
      if (!existsSync(dest)) {
        problems.push(`${file}:${i + 1}: ${target}: no such file`);
      } else if (anchor && dest.endsWith('.md') && !anchorsOf(readFileSync(dest, 'utf8')).has(anchor)) {
        problems.push(`${file}:${i + 1}: ${target}: no heading with that anchor`);
      }
    }
  }
  return problems;
}

const guides = [
  'README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
  'records/recipe-search.md',
];
for (const file of guides) {
  test(`${file}: every relative link leads to a file, and an anchor to a heading`, () => {
    assert.deepEqual(brokenLinks(file), []);
  });
}

test('the link checker finds a missing file and a missing anchor (so it can fail)', () => {
  assert.equal(
    slug('Translation: Multi30K EN→DE as the paper does it'),
    'translation-multi30k-ende-as-the-paper-does-it',
  );
  assert.equal(slug('The `qkv` command'), 'the-qkv-command');
  const file = join(tmp, 'links.md');
  writeFileSync(
    file,
    '# Top\n\n[a](../README.md) [b](no-such.md) [c](../docs/speed.md#speed) [d](../docs/speed.md#no-such) [e](#top)\n',
  );
  const problems = brokenLinks(relative(root, file));
  assert.equal(problems.length, 2, problems.join('\n'));
  assert.match(problems[0], /no-such\.md: no such file/);
  assert.match(problems[1], /#no-such: no heading/);
});

// ---- sh blocks: the commands they name exist ----

const scripts = Object.keys(JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).scripts ?? {});
const helpCache = new Map<string, string>();

/** `qkv [path...] --help`, from the sources (what `npm run build` compiles into dist/cli/main.js). */
function qkvHelp(path: string[]): string {
  const key = path.join(' ');
  let help = helpCache.get(key);
  if (help === undefined) {
    const r = spawnSync(process.execPath, ['--import', 'tsx', join(root, 'src', 'cli', 'main.ts'), ...path, '--help'], {
      cwd: root,
      encoding: 'utf8',
      timeout: 120_000,
    });
    assert.equal(r.status, 0, `qkv ${key} --help: exit status ${r.status}\n${r.stderr}`);
    help = r.stdout;
    helpCache.set(key, help);
  }
  return help;
}

/** The command names commander lists under "Commands:" in a help text. */
function commandsOf(help: string): string[] {
  const section = help.split(/^Commands:\s*$/m)[1] ?? '';
  return [...section.matchAll(/^ {2}([a-z][a-z0-9-]*)/gm)].map((m) => m[1]).filter((c) => c !== 'help');
}

/** Words of a shell command line, quotes removed (enough for the README's one-line commands). */
function words(segment: string): string[] {
  return [...segment.matchAll(/"([^"]*)"|'([^']*)'|(\S+)/g)].map((m) => m[1] ?? m[2] ?? m[3]);
}

/** Checks `qkv ARGS`: the command (and subcommand) exists, and so does every flag. Returns problems. */
function checkQkv(args: string[], where: string): string[] {
  const path: string[] = [];
  let help = qkvHelp(path);
  for (const w of args) {
    if (w.startsWith('-')) break;
    const commands = commandsOf(help);
    if (commands.length === 0) break; // a leaf command: the rest are its arguments
    if (!commands.includes(w))
      return [
        `${where}: 'qkv ${[...path, w].join(' ')}' is not a qkv command (qkv ${path.join(' ')} --help lists: ${commands.join(', ')})`,
      ];
    path.push(w);
    help = qkvHelp(path);
  }
  const problems: string[] = [];
  for (const w of args) {
    const flag = w.match(/^(--[a-z][a-z0-9-]*)/)?.[1];
    if (flag && !new RegExp(`(^|[\\s,])${flag}(?![a-z0-9-])`, 'm').test(help)) {
      problems.push(`${where}: 'qkv ${path.join(' ')}' has no flag ${flag}`);
    }
  }
  return problems;
}

/** The problems of one shell line: each command of it (split at |, &&, ;) must exist. */
function checkShellLine(line: string, where: string): string[] {
  const code = line.replace(/(^|\s)#.*$/, '').trim();
  if (code === '') return [];
  const problems: string[] = [];
  for (const segment of code.split(/\|\||&&|\||;/)) {
    const w = words(segment.trim());
    if (w.length === 0) continue;
    if (w[0] === 'qkv') {
      problems.push(...checkQkv(w.slice(1), where));
    } else if (w[0] === 'npx' && w[1] === 'qkv') {
      problems.push(...checkQkv(w.slice(2), where));
    } else if (w[0] === 'npm') {
      const rest = w.slice(1).filter((x) => x !== '-s' && x !== '--silent');
      const dash = rest.indexOf('--');
      const after = dash >= 0 ? rest.slice(dash + 1) : [];
      let script: string | undefined;
      if (rest[0] === 'run' || rest[0] === 'run-script') script = rest[1];
      else if (rest[0] === 'start' || rest[0] === 'test') script = rest[0];
      if (script === undefined) continue; // npm's own commands: install, pack, ci, ...
      if (!scripts.includes(script)) {
        problems.push(
          `${where}: 'npm run ${script}': package.json has no script '${script}' (it has: ${scripts.join(', ')})`,
        );
      } else if (script === 'qkv') {
        problems.push(...checkQkv(after, where));
      } else if (script === 'start' && after.length > 0) {
        problems.push(...checkQkv(['explore', ...after], where));
      }
    } else if (w[0] === 'node' && w[1] && !w[1].startsWith('-')) {
      if (!existsSync(join(root, w[1]))) problems.push(`${where}: 'node ${w[1]}': no such file in the repository`);
    }
  }
  return problems;
}

for (const block of shell) {
  test(`README.md:${block.line}: the sh block names only commands, scripts and flags that exist`, () => {
    const problems = block.code
      .split('\n')
      .flatMap((line, i) => checkShellLine(line, `README.md:${block.line + 1 + i}`));
    assert.deepEqual(problems, []);
  });
}

test('the sh checker finds a missing script, command and flag (so it can fail)', () => {
  assert.equal(checkShellLine('npm run no-such-script', 'x').length, 1);
  assert.equal(checkShellLine('npx qkv no-such-command --model m', 'x').length, 1);
  assert.equal(checkShellLine('echo a | npm run -s qkv -- translate --model m --no-such-flag', 'x').length, 1);
  assert.equal(checkShellLine('npm start -- --port 9000 --no-such-flag  # comment --ignored', 'x').length, 1);
  assert.deepEqual(checkShellLine('echo a | npm run -s qkv -- translate --model m --beam 4  # --nope', 'x'), []);
  assert.deepEqual(checkShellLine('npx qkv data encode --model m --out f', 'x'), []);
});
