/**
 * A model folder that names its ensemble (config.json `decoding.ensemble`, members in subfolders):
 * `qkv export --ensemble` writes one, translate and eval decode with every member by default and
 * with the folder's model alone under --no-ensemble, and bad folders are refused with the file and
 * the member named. Two tiny random models with one tokenizer (different seeds) are the members;
 * the reference is the library's ensemble decoding of the same two models.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { encodeLines, translateIds } from '../../src/decode/batch.ts';
import { exportModel } from '../../src/cli/commands/export.ts';
import { loadEnsemble, loadModelDir, UserError } from '../../src/cli/files.ts';
import { evaluate } from '../../src/cli/commands/eval.ts';
import { translate } from '../../src/cli/commands/translate.ts';
import { qkv, writeCorpus } from '../helpers/cli.ts';
import { makeTinyModel, makeTinySeparateModel, SENTENCES, tempDir } from '../e2e/tiny-model.ts';

const work = tempDir('qkv-ens-folder-');
const a = makeTinyModel(1);
const b = makeTinyModel(2);
const lines = [...SENTENCES.slice(0, 3), 'A girl runs.', 'Two dogs play in the tree.'];
const quiet = () => {};
const config = (dir: string) =>
  JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as {
    decoding?: { beam: number; alpha: number; chosen?: string; ensemble?: string[] };
  };

/** qkv translate on `lines` with a folder and flags, through a file. */
async function run(model: string, extra: { ensemble?: string[] | false; beam?: number } = {}): Promise<string[]> {
  const input = join(work, 'in.txt');
  const output = join(work, `out-${Math.random().toString(36).slice(2)}.txt`);
  writeFileSync(input, `${lines.join('\n')}\n`);
  await translate({ model, input, output, log: quiet, ...extra });
  return readFileSync(output, 'utf8').split('\n').slice(0, -1);
}

const ens = join(work, 'ens');

test('qkv export --ensemble: the members in subfolders that config.json names; f32 weights unchanged', () => {
  const logs: string[] = [];
  exportModel({ model: a.dir, out: ens, dtype: 'f32', ensemble: [b.dir], log: (l) => logs.push(l) });
  assert.deepEqual(config(ens).decoding, { beam: 4, alpha: 0.6, ensemble: ['member-2'] });
  for (const f of ['config.json', 'tokenizer.json', 'model.safetensors'])
    assert.ok(existsSync(join(ens, 'member-2', f)), f);
  assert.equal(config(join(ens, 'member-2')).decoding, undefined);
  assert.deepEqual(
    readFileSync(join(ens, 'member-2', 'model.safetensors')),
    readFileSync(join(b.dir, 'model.safetensors')),
  );
  assert.deepEqual(readFileSync(join(ens, 'model.safetensors')), readFileSync(join(a.dir, 'model.safetensors')));
  assert.ok(
    logs.some((l) => /α 0\.6 is the paper's default: choose it for this ensemble on val/.test(l)),
    logs.join('\n'),
  );
  assert.ok(
    logs.some((l) => /in 2 models: \., member-2, F32\)$/.test(l)),
    logs.join('\n'),
  );
  const loaded = loadEnsemble(ens);
  assert.equal(loaded.members.length, 2);
  assert.deepEqual(loaded.memberDirs, [ens, join(ens, 'member-2')]);
  // Exporting the folder again keeps its members and their names; --no-ensemble drops them.
  const again = join(work, 'again');
  exportModel({ model: ens, out: again, dtype: 'f32', log: quiet });
  assert.deepEqual(config(again).decoding, config(ens).decoding);
  assert.deepEqual(
    readFileSync(join(again, 'member-2', 'model.safetensors')),
    readFileSync(join(b.dir, 'model.safetensors')),
  );
  const alone = join(work, 'alone');
  const aloneLogs: string[] = [];
  exportModel({ model: ens, out: alone, dtype: 'f32', ensemble: false, log: (l) => aloneLogs.push(l) });
  assert.ok(
    aloneLogs.some((l) =>
      /α 0\.6 was chosen for .*ens with its ensemble: choose it for this model alone on val/.test(l),
    ),
    aloneLogs.join('\n'),
  );
  assert.deepEqual(config(alone).decoding, { beam: 4, alpha: 0.6 });
  assert.equal(existsSync(join(alone, 'member-2')), false);
});

test('qkv translate decodes with the ensemble the folder names; --no-ensemble with its model alone; --ensemble adds members', async () => {
  const { ids } = encodeLines(a.model, a.tokenizer, lines, {});
  const pair = translateIds([a.model, b.model], a.tokenizer, ids, { beam: 4, alpha: 0.6 });
  const single = translateIds(a.model, a.tokenizer, ids, { beam: 4, alpha: 0.6 });
  assert.notDeepEqual(pair, single, 'the two members should disagree somewhere, or this test shows nothing');
  assert.deepEqual(await run(ens), pair);
  assert.deepEqual(await run(ens, { ensemble: false }), single);
  assert.deepEqual(await run(a.dir, { ensemble: [b.dir] }), pair);
  // --ensemble comes after the folder's own members: [a, b, b].
  const three = translateIds([a.model, b.model, b.model], a.tokenizer, ids, { beam: 4, alpha: 0.6 });
  assert.deepEqual(await run(ens, { ensemble: [b.dir] }), three);
});

test('qkv eval --tune-alpha on a folder that names its ensemble chooses α for the ensemble and keeps the members', async () => {
  const data = join(work, 'data');
  writeCorpus(data, [['val', 0, 12]]);
  const dir = join(work, 'tune');
  cpSync(ens, dir, { recursive: true });
  const logs: string[] = [];
  await evaluate({ model: dir, split: 'val', data, beam: 2, tuneAlpha: [1.4], log: (l) => logs.push(l) });
  // Multi30K captions run past the tiny model's 24 positions: truncated, which sets the exit status.
  assert.ok(
    logs.some((l) => /truncated/.test(l)),
    logs.join('\n'),
  );
  process.exitCode = 0;
  const d = config(dir).decoding!;
  assert.deepEqual(d.ensemble, ['member-2']);
  assert.match(d.chosen!, /^val BLEU [\d.]+ with α (0\.6|1\.4) \(tried 0\.6, 1\.4; /);
  assert.ok(
    logs.some((l) => /\(beam 2, α 0\.6, an ensemble of 2 models\)/.test(l)),
    logs.join('\n'),
  );
  await assert.rejects(
    evaluate({ model: dir, split: 'val', data, tuneAlpha: [1], ensemble: false, log: quiet }),
    (e: Error) =>
      e instanceof UserError &&
      /--tune-alpha and --no-ensemble both given: α is written to --model's config\.json, for the ensemble it names \(member-2\)/.test(
        e.message,
      ),
  );
});

test('bad ensemble folders: a path outside the folder, a missing member, another tokenizer, a member with its own ensemble', () => {
  const withDecoding = (name: string, decoding: unknown, member?: string) => {
    const dir = join(work, name);
    cpSync(a.dir, dir, { recursive: true });
    if (member) cpSync(member, join(dir, 'm'), { recursive: true });
    writeFileSync(join(dir, 'config.json'), JSON.stringify({ ...config(a.dir), decoding }));
    return dir;
  };
  const refused = (dir: string, re: RegExp) =>
    assert.throws(
      () => loadEnsemble(dir),
      (e: Error) => e instanceof UserError && re.test(e.message),
      dir,
    );
  for (const bad of [['../x'], ['/tmp'], [], ['m', 'm'], 'm', ['a/./b']]) {
    refused(
      withDecoding('bad', { beam: 4, alpha: 0.6, ensemble: bad }),
      /config\.json: 'decoding\.ensemble' must be a non-empty list of distinct subfolders of the model folder \(e\.g\. \["member-2"\]\), got /,
    );
  }
  refused(
    withDecoding('missing', { beam: 4, alpha: 0.6, ensemble: ['m'] }),
    /missing\/config\.json decoding\.ensemble member m: model folder not found: .*missing\/m$/,
  );
  const sep = makeTinySeparateModel(1);
  refused(
    withDecoding('other-tok', { beam: 4, alpha: 0.6, ensemble: ['m'] }, sep.dir),
    /decoding\.ensemble member m: separate vocabularies, but --model .* has one shared vocabulary/,
  );
  refused(
    withDecoding('nested', { beam: 4, alpha: 0.6, ensemble: ['m'] }, ens),
    /decoding\.ensemble member m: its config\.json names an ensemble of its own \(decoding\.ensemble\); members must be single models/,
  );
  // --no-ensemble loads the folder alone, even with a broken member.
  assert.equal(
    loadEnsemble(withDecoding('missing2', { beam: 4, alpha: 0.6, ensemble: ['m'] }), [], { own: false }).members.length,
    1,
  );
  // loadModelDir (attention, the explorer) reads the folder's own model and ignores its members.
  assert.equal(loadModelDir(ens).model.config.vocabSize, a.model.config.vocabSize);
});

test('qkv export --format onnx of an ensemble folder: its own model, and config.json no longer names members; CLI flag errors', () => {
  const onnx = join(work, 'onnx');
  const logs: string[] = [];
  exportModel({ model: ens, out: onnx, format: 'onnx', log: (l) => logs.push(l) });
  assert.deepEqual(config(onnx).decoding, { beam: 4, alpha: 0.6 });
  assert.ok(
    logs.some((l) =>
      /its config\.json names an ensemble \(member-2\); the ONNX graphs hold .* own model alone/.test(l),
    ),
    logs.join('\n'),
  );
  assert.throws(
    () => exportModel({ model: ens, out: join(work, 'onnx2'), format: 'onnx', ensemble: [b.dir], log: quiet }),
    /--ensemble is for translation models in --format safetensors \(an ONNX export holds one model\)/,
  );
  const both = qkv(['translate', '--model', ens, '--ensemble', b.dir, '--no-ensemble'], 'A dog.\n');
  assert.equal(both.status, 1);
  assert.match(both.stderr, /--ensemble and --no-ensemble both given: pass one/);
  const info = qkv(['info', '--model', ens]);
  assert.equal(info.status, 0, info.stderr);
  assert.deepEqual(JSON.parse(info.stdout).decoding.ensemble, ['member-2']);
});
