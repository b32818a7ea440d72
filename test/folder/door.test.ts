/**
 * One door for folders (issue 45, point 5): every kind (a translation model, an ensemble, a qkv GPT,
 * a Hugging Face GPT-2, a Hugging Face Marian), whole or its shape only, is read by one reader over
 * a source (src/folder/open.ts), driven synchronously (the Node readers) or not (openFolder). Here:
 *  - each kind from a Node directory (the synchronous readers and openFolder over dirSource), from
 *    contents in memory, from a fake URL and from File objects gives the same parameters and tokenizers;
 *  - a broken folder of each kind gives the same error from every source, once the source's way of
 *    naming files (a path, a URL, a bare name) is taken out;
 *  - a Hugging Face BERT config.json is refused from every source, for its model_type, before any
 *    other file is requested (the requests are counted);
 *  - a Hugging Face GPT-2's weights are still read in ranges, never whole, where the source has ranges.
 */
import assert from 'node:assert/strict';
import { cpSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import {
  contentsSource,
  filesSource,
  FolderError,
  folderShapeSync,
  lmFromFiles,
  marianFromFiles,
  openFolder,
  openFolderSync,
  readFolderShape,
  runAsync,
  seq2seqFromFiles,
  urlSource,
  type FolderShape,
  type FolderSource,
  type OpenedFolder,
} from '../../src/folder/index.ts';
import {
  dirSource,
  folderKindOf,
  readEnsemble,
  readGptShape,
  readLm,
  readMarianDir,
  readMarianShape,
  readSeq2Seq,
  readSeq2SeqShape,
} from '../../src/folder/node.ts';
import type { Module } from '../../src/nn/module.ts';
import { makeTinyGpt, makeTinyModel, makeTinySeparateModel, tempDir } from '../e2e/tiny-model.ts';
import { root } from '../helpers/cli.ts';

const HF = join(root, 'test/fixtures/hf-gpt2-tiny');
const MARIAN = join(root, 'test/fixtures/marian-tiny');
const BASE = 'https://host/m/';

/** A folder's files (and its subfolders' as 'sub/name'), by name. */
function contents(dir: string, prefix = ''): Map<string, Uint8Array> {
  const m = new Map<string, Uint8Array>();
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.isDirectory()) for (const [k, v] of contents(join(dir, e.name), `${prefix}${e.name}/`)) m.set(k, v);
    else m.set(`${prefix}${e.name}`, new Uint8Array(readFileSync(join(dir, e.name))));
  }
  return m;
}

/** A fake server for `files` under BASE; `asked` logs every URL fetched. */
function fakeUrl(files: Map<string, Uint8Array>, asked: string[] = []): FolderSource {
  const fetchFn = (async (url: string) => {
    asked.push(url);
    const f = files.get(url.slice(BASE.length));
    return f ? new Response(f as Uint8Array<ArrayBuffer>) : new Response('', { status: 404 });
  }) as typeof fetch;
  return urlSource(BASE, fetchFn);
}

/** The folder's files as a folder picker gives them (webkitRelativePath 'm/…'). */
function picked(files: Map<string, Uint8Array>): File[] {
  return [...files].map(([name, bytes]) =>
    Object.assign(new File([bytes as Uint8Array<ArrayBuffer>], name.split('/').pop()!), {
      webkitRelativePath: `m/${name}`,
    }),
  );
}

/** `src` with every request it answers logged as 'read FILE', 'json FILE' or 'range FILE' (members: 'sub/FILE'). */
function counted(src: FolderSource, log: string[], prefix = ''): FolderSource {
  return {
    ...src,
    read: (f) => {
      log.push(`read ${prefix}${f}`);
      return src.read(f);
    },
    json: src.json
      ? (f) => {
          log.push(`json ${prefix}${f}`);
          return src.json!(f);
        }
      : undefined,
    range: src.range
      ? (f) => {
          log.push(`range ${prefix}${f}`);
          return src.range!(f);
        }
      : undefined,
    sub: src.sub ? (p) => counted(src.sub!(p), log, `${prefix}${p}/`) : undefined,
  };
}

/** Every way to open `dir`: the sync reader given, openFolder over dirSource, contents, a URL and File objects. */
async function everySource(dir: string, sync: () => OpenedFolder | object): Promise<[string, object][]> {
  const files = contents(dir);
  return [
    ['Node reader', sync()],
    ['openFolderSync(dirSource)', openFolderSync(dirSource(dir))],
    ['openFolder(dirSource)', await openFolder(dirSource(dir))],
    ['contents', await openFolder(contentsSource(files))],
    ['url', await openFolder(fakeUrl(files))],
    ['File objects', await openFolder(filesSource(picked(files)))],
  ];
}

function params(m: Module): Record<string, number[]> {
  return Object.fromEntries(Object.entries(m.stateDict()).map(([k, t]) => [k, Array.from(t.dataSync())]));
}

type Opened = { model: Module; members?: Module[]; tokenizer: { encode(s: string): unknown } };

/** All opened the same: parameters of the model (and members) equal, the same ids for a sentence. */
function allSame(opened: [string, object][], sentence = 'A dog runs in the park.'): void {
  const [[, first]] = opened as [string, Opened][];
  for (const [how, o] of opened as [string, Opened][]) {
    assert.deepEqual(params(o.model), params(first.model), `${how}: parameters`);
    assert.equal(o.model.training, false, `${how}: eval mode`);
    assert.deepEqual(o.tokenizer.encode(sentence), first.tokenizer.encode(sentence), `${how}: tokenizer`);
    assert.equal(o.members?.length, first.members?.length, `${how}: members`);
    o.members?.forEach((m, i) => assert.deepEqual(params(m), params(first.members![i]), `${how}: member ${i}`));
  }
}

test('every kind opens to the same model from a Node directory, contents, a URL and File objects', async () => {
  const tiny = makeTinyModel(7);
  allSame(await everySource(tiny.dir, () => readSeq2Seq(tiny.dir)));
  const sep = makeTinySeparateModel(3).dir;
  allSame(await everySource(sep, () => readSeq2Seq(sep)));
  // An ensemble: a member in a subfolder, named by config.json.
  const ens = ensembleDir();
  const opened = await everySource(ens, () => readEnsemble(ens));
  allSame(opened);
  for (const [how, o] of opened) assert.equal((o as Opened).members!.length, 2, how);
  const gpt = makeTinyGpt(3);
  allSame(await everySource(gpt.dir, () => readLm(gpt.dir)), 'A dog');
  allSame(await everySource(HF, () => readLm(HF)));
  allSame(await everySource(MARIAN, () => readMarianDir(MARIAN)), 'I like cats.');
  assert.deepEqual(params((await openFolder(contents(gpt.dir))).model), params(gpt.model), 'the weights written');
});

function ensembleDir(): string {
  const { dir } = makeTinyModel(5);
  const member = makeTinyModel(6);
  cpSync(member.dir, join(dir, 'member-2'), { recursive: true });
  const cfg = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8'));
  writeFileSync(
    join(dir, 'config.json'),
    JSON.stringify({ ...cfg, decoding: { beam: 2, alpha: 0.6, ensemble: ['member-2'] } }),
  );
  return dir;
}

/** A shape's parts that do not depend on random weights: parameter names and shapes, the tokenizer's ids. */
function shapeOf(s: FolderShape | object): unknown {
  const o = s as {
    model?: Module;
    tokenizer: { encode(x: string): unknown; vocabSize: number };
    modelConfig?: unknown;
  };
  const named = o.model
    ? Object.fromEntries(Object.entries(o.model.stateDict()).map(([k, t]) => [k, t.shape]))
    : o.modelConfig;
  return { named, ids: o.tokenizer.encode('A dog runs.'), vocab: o.tokenizer.vocabSize };
}

test('shape reads (no weight read) agree across sources, and read no weights', async () => {
  const cases: [string, ((dir: string) => object) | null][] = [
    [makeTinyModel(2).dir, readSeq2SeqShape],
    [makeTinyGpt(2).dir, readGptShape],
    [HF, null],
    [MARIAN, readMarianShape],
  ];
  for (const [dir, reader] of cases) {
    const files = contents(dir);
    const log: string[] = [];
    const all = [
      folderShapeSync(dirSource(dir)),
      folderShapeSync(contentsSource(files)),
      await runAsync(readFolderShape(counted(fakeUrl(files), log))),
      ...(reader ? [reader(dir)] : []),
    ];
    for (const s of all) assert.deepEqual(shapeOf(s), shapeOf(all[0]), dir);
    assert.ok(!log.some((l) => /(model\.safetensors|pytorch_model\.bin)$/.test(l) && l.startsWith('read')), log.join());
  }
});

/** The message with the source's way of naming files taken out. */
const unnamed = (e: unknown, prefix: string) =>
  String((e as Error).message)
    .split(prefix)
    .join('');

async function errorsOf(dir: string, sync: (dir: string) => unknown): Promise<string[]> {
  const files = contents(dir);
  const out: string[] = [];
  const caught = async (f: () => unknown, prefix: string) => {
    try {
      await f();
    } catch (e) {
      assert.ok(e instanceof FolderError, String(e));
      assert.ok(!e.message.includes('\n'), e.message);
      return out.push(unnamed(e, prefix));
    }
    assert.fail(`${dir} opened`);
  };
  await caught(() => sync(dir), `${dir}/`);
  await caught(() => openFolder(dirSource(dir)), `${dir}/`);
  await caught(() => openFolder(contentsSource(files)), '');
  await caught(() => openFolder(fakeUrl(files)), BASE);
  await caught(() => openFolder(filesSource(picked(files))), '');
  return out;
}

function copyOf(dir: string, edit: Record<string, string | Uint8Array | null>): string {
  const out = join(tempDir('qkv-door-'), 'm');
  cpSync(dir, out, { recursive: true });
  for (const [f, v] of Object.entries(edit)) {
    if (v === null) rmSync(join(out, f), { force: true });
    else writeFileSync(join(out, f), v);
  }
  return out;
}

test('a broken folder of each kind gives the same error from every source', async () => {
  const tiny = makeTinyModel(4).dir;
  const gpt = makeTinyGpt(4).dir;
  const ens = ensembleDir();
  const cases: [string, (d: string) => unknown, RegExp][] = [
    [copyOf(tiny, { 'tokenizer.json': null }), readSeq2Seq, /^tokenizer not found: tokenizer\.json$/],
    [copyOf(tiny, { 'model.safetensors': new Uint8Array(4) }), readSeq2Seq, /^model\.safetensors: /],
    [copyOf(tiny, { 'config.json': '{"format": ' }), readSeq2Seq, /^model config is not valid JSON: config\.json \(/],
    [copyOf(ens, { 'member-2/tokenizer.json': '{}' }), readEnsemble, /^member-2\/tokenizer\.json: BpeTokenizer/],
    [
      copyOf(ens, { 'member-2/config.json': null }),
      readEnsemble,
      /member member-2: model config not found: member-2\//,
    ],
    [copyOf(gpt, { 'model.safetensors': null }), readLm, /^model weights not found: model\.safetensors$/],
    [
      copyOf(HF, { 'model.safetensors': readFileSync(join(HF, 'model.safetensors')).subarray(0, 100_000) }),
      readLm,
      /^model\.safetensors: /,
    ],
    [copyOf(HF, { 'model.safetensors': null, 'pytorch_model.bin': 'x' }), readLm, /PyTorch pickle qkv does not read/],
    [copyOf(MARIAN, { 'target.spm': null }), readMarianDir, /^SentencePiece model not found: target\.spm/],
    [
      copyOf(MARIAN, { 'model.safetensors': null, 'pytorch_model.bin': null }),
      readMarianDir,
      /^model weights not found: model\.safetensors \(nor pytorch_model\.bin/,
    ],
  ];
  for (const [dir, sync, re] of cases) {
    const errs = await errorsOf(dir, sync);
    for (const e of errs) assert.equal(e, errs[0], `${re.source}: ${errs.join(' | ')}`);
    assert.match(errs[0], re);
  }
});

test('a BERT config.json is refused from every source, for its model_type, before any other file is requested', async () => {
  const bertConfig = JSON.stringify({ model_type: 'albert', vocab_size: 30000, hidden_size: 768 });
  // A BERT folder as the Hub serves it: a WordPiece tokenizer.json qkv would refuse for itself.
  const dir = copyOf(HF, {
    'config.json': bertConfig,
    'tokenizer.json': JSON.stringify({ model: { type: 'WordPiece', vocab: {} } }),
  });
  const files = contents(dir);
  const bert =
    /config\.json: Hugging Face model_type 'albert' is not supported \(qkv reads model_type 'gpt2'.*'marian'.*'qkv-seq2seq' and 'qkv-gpt'\)$/;
  const sources: [string, (log: string[]) => FolderSource][] = [
    ['Node directory', () => dirSource(dir)],
    ['contents', () => contentsSource(files)],
    ['File objects', () => filesSource(picked(files))],
  ];
  for (const [how, make] of sources) {
    const log: string[] = [];
    await assert.rejects(openFolder(counted(make(log), log)), bert, how);
    assert.deepEqual(
      log.filter((l) => !l.endsWith(' config.json')),
      [],
      `${how}: ${log.join(', ')}`,
    );
    assert.ok(log.length >= 1, how);
    const sync: string[] = [];
    if (how !== 'File objects') {
      assert.throws(() => openFolderSync(counted(make(sync), sync)), bert, how);
      assert.deepEqual(
        sync.filter((l) => !l.endsWith(' config.json')),
        [],
        how,
      );
    }
  }
  const asked: string[] = [];
  await assert.rejects(openFolder(fakeUrl(files, asked)), bert);
  assert.deepEqual(asked, [`${BASE}config.json`]);
  // The loaders from contents (the case: lmFromFiles refused BERT for its tokenizer, not its model_type).
  const bertJson = JSON.parse(bertConfig);
  assert.throws(() => lmFromFiles({ config: bertJson, tokenizer: undefined }), bert);
  assert.throws(() => seq2seqFromFiles({ config: bertJson, tokenizer: undefined }), bert);
  assert.throws(
    () => marianFromFiles({ config: bertJson, vocab: undefined, sourceSpm: undefined, targetSpm: undefined }),
    bert,
  );
  // The Node readers of each kind, and the kind itself.
  for (const read of [
    readSeq2Seq,
    readSeq2SeqShape,
    readLm,
    readGptShape,
    readMarianDir,
    readMarianShape,
    folderKindOf,
  ])
    assert.throws(() => read(dir), bert, read.name);
});

test('a Hugging Face GPT-2 is read in ranges where the source has them: model.safetensors never whole', async () => {
  const size = readFileSync(join(HF, 'model.safetensors')).length;
  for (const src of [dirSource(HF), filesSource(picked(contents(HF)))]) {
    const ranges: number[] = [];
    const whole: string[] = [];
    const watched: FolderSource = {
      ...src,
      read: (f) => {
        whole.push(f);
        return src.read(f);
      },
      range: async (f) => {
        const r = await src.range!(f);
        return (
          r && {
            size: r.size,
            read: (b, e) => {
              ranges.push(e - b);
              return r.read(b, e);
            },
          }
        );
      },
    };
    const lm = await openFolder(watched);
    assert.equal(lm.kind, 'hf-gpt2');
    assert.ok(!whole.includes('model.safetensors'), whole.join());
    assert.ok(ranges.length > 10, `${ranges.length} ranges`);
    assert.ok(Math.max(...ranges) < size / 2, `largest range ${Math.max(...ranges)} of ${size}`);
  }
});

test('the synchronous door refuses a source that answers with promises, in one line', () => {
  assert.throws(
    () => openFolderSync(fakeUrl(new Map())),
    /^Error: this folder source answers asynchronously \(a URL, File objects\): open it with await openFolder\(\.\.\.\)$/,
  );
});

test('the wanted kind: a folder of another kind is refused after config.json, naming both', async () => {
  const gpt = makeTinyGpt(2).dir;
  assert.throws(
    () => readMarianDir(gpt),
    /config\.json: a qkv language model \(format 'qkv-gpt'\), not a Hugging Face Marian translation model/,
  );
  assert.throws(
    () => readLm(MARIAN),
    /config\.json: a Hugging Face Marian translation model \(model_type 'marian'\), not a qkv language model \(format 'qkv-gpt'\) or a Hugging Face GPT-2 model/,
  );
  // A qkv reader names the format it expected (the messages the folder tests assert).
  assert.throws(() => readSeq2Seq(gpt), /expected format 'qkv-seq2seq' with a 'model' section, got format 'qkv-gpt'$/);
  assert.equal(folderKindOf(MARIAN), 'marian');
});
