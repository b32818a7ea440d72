/**
 * The folder module (src/folder/): kind detection for the three kinds, opening from contents, from
 * a path and from File objects to the same model, and each error path naming the file and what was
 * expected.
 */
import assert from 'node:assert/strict';
import { cpSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import {
  contentsSource,
  FolderError,
  folderKind,
  urlSource,
  gpt2TokenizerJson,
  hfTokenizer,
  openFolder,
  seq2seqFromFiles,
  type OpenedFolder,
} from '../../src/folder/index.ts';
import { dirSource, folderKindOf, readEnsemble, readLm, readSeq2Seq } from '../../src/folder/node.ts';
import { ByteLevelBpeTokenizer } from '../../src/text/bytelevel.ts';
import { makeTinyGpt, makeTinyModel, makeTinySeparateModel, tempDir } from '../e2e/tiny-model.ts';
import { root } from '../helpers/cli.ts';

const HF = join(root, 'test/fixtures/hf-gpt2-tiny');

/** A folder's own files (and its subfolders' as 'sub/name'), by name. */
function contents(dir: string, prefix = ''): Map<string, Uint8Array> {
  const m = new Map<string, Uint8Array>();
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.isDirectory()) for (const [k, v] of contents(join(dir, e.name), `${prefix}${e.name}/`)) m.set(k, v);
    else m.set(`${prefix}${e.name}`, new Uint8Array(readFileSync(join(dir, e.name))));
  }
  return m;
}

function copyOf(dir: string, edit: Record<string, string | Uint8Array | null> = {}): string {
  const out = join(tempDir('qkv-folder-'), 'm');
  cpSync(dir, out, { recursive: true });
  for (const [f, v] of Object.entries(edit)) {
    if (v === null) rmSync(join(out, f), { force: true });
    else writeFileSync(join(out, f), v);
  }
  return out;
}

const json = (dir: string, f: string) => JSON.parse(readFileSync(join(dir, f), 'utf8')) as Record<string, unknown>;

function sameWeights(a: OpenedFolder['model'], b: OpenedFolder['model']): void {
  const sa = a.stateDict();
  const sb = b.stateDict();
  assert.deepEqual(Object.keys(sa), Object.keys(sb));
  for (const k of Object.keys(sa)) assert.deepEqual(sa[k].dataSync(), sb[k].dataSync(), k);
}

test('kind detection: seq2seq, gpt, hf-gpt2 from config.json; anything else named', () => {
  assert.equal(folderKind(json(join(root, 'models/multi30k-en-de'), 'config.json')), 'seq2seq');
  assert.equal(folderKind(json(join(root, 'models/gpt-multi30k-char'), 'config.json')), 'gpt');
  assert.equal(folderKind(json(HF, 'config.json')), 'hf-gpt2');
  assert.equal(folderKindOf(HF), 'hf-gpt2');
  assert.throws(
    () => folderKind({ model_type: 'albert' }, 'x/config.json'),
    (e: Error) =>
      e instanceof FolderError &&
      e.file === 'x/config.json' &&
      /^x\/config\.json: Hugging Face model_type 'albert' is not supported \(qkv reads model_type 'gpt2'/.test(
        e.message,
      ),
  );
  assert.throws(
    () => folderKind({ format: 'qkv-bert' }),
    /^Error: config\.json: expected format 'qkv-seq2seq' \(a translation model from qkv train\) or 'qkv-gpt' \(a language model from qkv train-lm\), got format 'qkv-bert'$/,
  );
  assert.throws(() => folderKind(null), /got not a JSON object \(null\)/);
  assert.throws(() => folderKindOf(join(root, 'no-such')), /^Error: model folder not found: .*no-such$/);
  assert.throws(() => folderKindOf(join(root, 'src')), /^Error: model config not found: .*src\/config\.json$/);
});

test('a translation folder opens to the same model from a path, from contents and from File objects', async () => {
  const { dir, model } = makeTinyModel(3);
  const fromPath = readSeq2Seq(dir);
  sameWeights(fromPath.model, model);
  const fromContents = await openFolder(contents(dir));
  assert.equal(fromContents.kind, 'seq2seq');
  sameWeights(fromContents.model, model);
  const files = [...contents(dir)].map(([name, bytes]) =>
    Object.assign(new File([bytes as Uint8Array<ArrayBuffer>], name), { webkitRelativePath: `tiny/${name}` }),
  );
  const fromFiles = await openFolder(files);
  sameWeights(fromFiles.model, model);
  const fromDir = await openFolder(dirSource(dir));
  sameWeights(fromDir.model, model);
  assert.equal(fromDir.model.training, false, 'eval mode');
});

test('separate vocabularies: target_tokenizer.json is required, and refused beside a shared vocabulary', async () => {
  const sep = makeTinySeparateModel(2);
  const opened = readSeq2Seq(sep.dir);
  assert.notEqual(opened.targetTokenizer, opened.tokenizer);
  assert.throws(
    () => readSeq2Seq(copyOf(sep.dir, { 'target_tokenizer.json': null })),
    /^Error: target tokenizer not found: .*target_tokenizer\.json \(.*config\.json describes a model with separate source and target vocabularies: model\.tgtVocabSize\)$/,
  );
  const shared = makeTinyModel(2);
  const extra = copyOf(shared.dir, { 'target_tokenizer.json': readFileSync(join(shared.dir, 'tokenizer.json')) });
  assert.throws(
    () => readSeq2Seq(extra),
    /target_tokenizer\.json: a target tokenizer, but .*config\.json describes a model with one shared vocabulary/,
  );
  const m = contents(extra);
  await assert.rejects(
    openFolder(m),
    /^Error: target_tokenizer\.json: a target tokenizer, but config\.json describes a model with one shared vocabulary/,
  );
});

test('each error path of a translation folder names the file and what was expected', async () => {
  const { dir } = makeTinyModel(4);
  const cfg = json(dir, 'config.json');
  const bad = (edit: Record<string, string | Uint8Array | null>, re: RegExp) => {
    assert.throws(
      () => readSeq2Seq(copyOf(dir, edit)),
      (e: Error) => e instanceof FolderError && re.test(e.message) && !e.message.includes('\n'),
      re.source,
    );
  };
  bad({ 'config.json': null }, /^model config not found: .*\/config\.json$/);
  bad({ 'config.json': '{"format": ' }, /^model config is not valid JSON: .*\/config\.json \(/);
  bad(
    { 'config.json': JSON.stringify({ ...cfg, format: 'qkv-gpt' }) },
    /config\.json: expected format 'qkv-seq2seq' with a 'model' section, got format 'qkv-gpt'$/,
  );
  bad(
    { 'config.json': JSON.stringify({ ...cfg, decoding: { beam: 0, alpha: 0.6 } }) },
    /config\.json: 'decoding' must be \{"beam": a positive integer, "alpha": a number >= 0\}, got \{"beam":0,"alpha":0\.6\}$/,
  );
  bad(
    { 'config.json': JSON.stringify({ ...cfg, decoding: { beam: 4, alpha: 0.6, mbr: 'yes' } }) },
    /'decoding\.mbr' must be true or false, got "yes"$/,
  );
  bad(
    { 'config.json': JSON.stringify({ ...cfg, decoding: { beam: 4, alpha: 0.6, ensemble: ['../x'] } }) },
    /'decoding\.ensemble' must be a non-empty list of distinct subfolders of the model folder/,
  );
  bad(
    { 'config.json': JSON.stringify({ ...cfg, model: { ...(cfg.model as object), nhead: 3 } }) },
    /config\.json: .*nhead/,
  );
  bad({ 'tokenizer.json': null }, /^tokenizer not found: .*\/tokenizer\.json$/);
  bad(
    { 'tokenizer.json': '{"model": {"type": "WordPiece"}}' },
    /tokenizer\.json: BpeTokenizer\.fromJSON: model\.type must be "BPE"$/,
  );
  bad({ 'model.safetensors': null }, /^model weights not found: .*\/model\.safetensors$/);
  bad({ 'model.safetensors': new Uint8Array(4) }, /model\.safetensors: .*/);
  // From contents, the same checks, files named as given.
  assert.throws(
    () => seq2seqFromFiles({ config: cfg, tokenizer: json(dir, 'tokenizer.json') }),
    /^Error: model weights not found: model\.safetensors$/,
  );
  await assert.rejects(
    openFolder(new Map([['tokenizer.json', '{}']])),
    /^Error: model config not found: config\.json$/,
  );
});

test('ensembles: members from subfolders (path and contents), each checked to share the tokenizers', async () => {
  const { dir } = makeTinyModel(5);
  const member = makeTinyModel(6);
  const cfg = json(dir, 'config.json');
  cpSync(member.dir, join(dir, 'member-2'), { recursive: true });
  writeFileSync(
    join(dir, 'config.json'),
    JSON.stringify({ ...cfg, decoding: { beam: 2, alpha: 0.6, ensemble: ['member-2'] } }),
  );
  const e = readEnsemble(dir);
  assert.equal(e.members.length, 2);
  sameWeights(e.members[1], member.model);
  assert.equal(readEnsemble(dir, [], { own: false }).members.length, 1);
  const opened = await openFolder(contents(dir));
  assert.ok(opened.kind === 'seq2seq');
  assert.equal(opened.members.length, 2);
  sameWeights(opened.members[1], member.model);
  const alone = await openFolder(contents(dir), { ensemble: false });
  assert.ok(alone.kind === 'seq2seq');
  assert.equal(alone.members.length, 1);
  // A member with its own ensemble, a different tokenizer, a missing member.
  writeFileSync(
    join(dir, 'member-2', 'config.json'),
    JSON.stringify({ ...json(dir, 'member-2/config.json'), decoding: { beam: 2, alpha: 0.6, ensemble: ['x'] } }),
  );
  assert.throws(
    () => readEnsemble(dir),
    /decoding\.ensemble member member-2: its config\.json names an ensemble of its own/,
  );
  writeFileSync(join(dir, 'member-2', 'config.json'), JSON.stringify(json(member.dir, 'config.json')));
  const tok = json(dir, 'member-2/tokenizer.json') as { added_tokens: { content: string }[] };
  tok.added_tokens[0].content = '<PAD>';
  const vocab = (tok as unknown as { model: { vocab: Record<string, number> } }).model.vocab;
  delete vocab['<pad>'];
  vocab['<PAD>'] = 0;
  writeFileSync(join(dir, 'member-2', 'tokenizer.json'), JSON.stringify(tok));
  assert.throws(
    () => readEnsemble(dir),
    /member member-2: its tokenizer\.json differs from --model .*'s: ensemble members must share their tokenizers/,
  );
  await assert.rejects(openFolder(contents(dir)), /member member-2: its tokenizer\.json differs/);
  rmSync(join(dir, 'member-2'), { recursive: true });
  assert.throws(() => readEnsemble(dir), /decoding\.ensemble member member-2: model folder not found: .*member-2$/);
  await assert.rejects(openFolder(contents(dir)), /decoding\.ensemble member member-2: model folder not found/);
});

test('a qkv GPT folder: path and contents give the same model; its error paths', async () => {
  const { dir, model } = makeTinyGpt(2);
  const lm = readLm(dir);
  sameWeights(lm.model, model);
  const opened = await openFolder(contents(dir));
  assert.equal(opened.kind, 'gpt');
  sameWeights(opened.model, model);
  const cfg = json(dir, 'config.json');
  const bad = (edit: Record<string, string | null>, re: RegExp) =>
    assert.throws(() => readLm(copyOf(dir, edit)), re, re.source);
  bad(
    { 'config.json': JSON.stringify({ ...cfg, tokenizer: 'word' }) },
    /config\.json: expected "tokenizer": "char" or "bpe", got 'word'$/,
  );
  bad(
    { 'config.json': JSON.stringify({ ...cfg, model: { ...(cfg.model as object), vocabSize: 7 } }) },
    /tokenizer\.json: \d+ tokens, but .*config\.json's model\.vocabSize is 7$/,
  );
  bad({ 'tokenizer.json': null }, /^Error: tokenizer not found: .*tokenizer\.json$/);
  bad({ 'model.safetensors': null }, /^Error: model weights not found: .*model\.safetensors$/);
});

test('a Hugging Face GPT-2 folder: tokenizer.json, or vocab.json + merges.txt; pytorch_model.bin alone is refused in one line', async () => {
  const lm = readLm(HF);
  const opened = await openFolder(contents(HF));
  assert.equal(opened.kind, 'hf-gpt2');
  sameWeights(opened.model, lm.model);
  // vocab.json + merges.txt, as the slow GPT2Tokenizer's files: the same ids as tokenizer.json.
  const tj = json(HF, 'tokenizer.json') as {
    model: { vocab: Record<string, number>; merges: string[] | [string, string][] };
  };
  const merges = `#version: 0.2\n${tj.model.merges.map((m) => (Array.isArray(m) ? m.join(' ') : m)).join('\n')}\n`;
  const vocab = { ...tj.model.vocab, '<|endoftext|>': 316 };
  const slow = copyOf(HF, { 'tokenizer.json': null, 'vocab.json': JSON.stringify(vocab), 'merges.txt': merges });
  const fromSlow = readLm(slow);
  const text = 'A man is riding a bike.\nTwo dogs <|endoftext|> play!';
  assert.deepEqual(fromSlow.tokenizer.encode(text), lm.tokenizer.encode(text));
  assert.equal(fromSlow.separatorId, lm.separatorId);
  assert.equal((await openFolder(contents(slow))).tokenizer.encode(text).join(), lm.tokenizer.encode(text).join());
  assert.ok(hfTokenizer({ tokenizer: gpt2TokenizerJson(vocab, merges) }) instanceof ByteLevelBpeTokenizer);
  assert.throws(
    () => gpt2TokenizerJson(vocab, '#version: 0.2\na b c\n'),
    /^Error: merges\.txt: line 2: expected two tokens separated by one space, got "a b c"$/,
  );
  assert.throws(
    () => gpt2TokenizerJson([1], merges),
    /^Error: vocab\.json: expected an object of token: id, got an array$/,
  );
  assert.throws(
    () => readLm(copyOf(HF, { 'tokenizer.json': null })),
    /^Error: tokenizer not found: .*tokenizer\.json \(a Hugging Face GPT-2 folder holds tokenizer\.json, or vocab\.json and merges\.txt\)$/,
  );
  // PyTorch's pickle alone: one line that says how to get model.safetensors.
  const pt = copyOf(HF, { 'model.safetensors': null, 'pytorch_model.bin': new Uint8Array(16) });
  const oneLine =
    /^Error: model weights not found: .*model\.safetensors \(the folder holds pytorch_model\.bin, a PyTorch pickle qkv does not read: download model\.safetensors .*save_pretrained.*\)$/;
  assert.throws(
    () => readLm(pt),
    (e: Error) => oneLine.test(String(e)) && !e.message.includes('\n'),
  );
  await assert.rejects(openFolder(contents(pt)), oneLine);
  await assert.rejects(openFolder(dirSource(pt)), oneLine);
  // Weights cut short: named.
  const w = readFileSync(join(HF, 'model.safetensors'));
  assert.throws(
    () => readLm(copyOf(HF, { 'model.safetensors': w.subarray(0, w.length - 4096) })),
    /model\.safetensors: .*data/,
  );
});

test('contentsSource names files as given, members under their subfolder', async () => {
  const src = contentsSource({ 'config.json': '{}', 'm/config.json': '{"a":1}' }, 'mem');
  assert.equal(src.name('config.json'), 'config.json');
  const sub = src.sub!('m');
  assert.equal(sub.name('config.json'), 'm/config.json');
  assert.deepEqual(new TextDecoder().decode(await sub.read('config.json')), '{"a":1}');
  assert.equal(await sub.read('tokenizer.json'), undefined);
});

test('a folder served over HTTP: files fetched under the base URL, 404 a missing file, other statuses named', async () => {
  const { dir, model } = makeTinyGpt(4);
  const files = contents(dir);
  const asked: string[] = [];
  const fetchFn = (async (url: string) => {
    asked.push(url);
    const name = url.slice('https://host/m/'.length);
    if (name === 'broken.json') return new Response('', { status: 500 });
    const f = files.get(name);
    return f ? new Response(f as Uint8Array<ArrayBuffer>) : new Response('', { status: 404 });
  }) as typeof fetch;
  const opened = await openFolder(urlSource('https://host/m', fetchFn));
  assert.equal(opened.kind, 'gpt');
  sameWeights(opened.model, model);
  assert.ok(asked.includes('https://host/m/config.json') && asked.includes('https://host/m/model.safetensors'));
  files.delete('model.safetensors');
  await assert.rejects(
    openFolder(urlSource('https://host/m/', fetchFn)),
    /^Error: model weights not found: https:\/\/host\/m\/model\.safetensors$/,
  );
  await assert.rejects(
    async () => urlSource('https://host/m/', fetchFn).read('broken.json'),
    /^Error: https:\/\/host\/m\/broken\.json: HTTP 500$/,
  );
});
