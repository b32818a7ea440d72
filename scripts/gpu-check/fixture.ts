/**
 * The inputs of scripts/gpu-check/run.sh, written here (no Node on the GPU machine):
 *   DIR/tiny/     the train.py tests' tiny run at step 0 (dropout 0), its train/val ids, and qkv's
 *                 own 5 steps from it: qkv-losses.json and qkv-step5.safetensors;
 *   DIR/m30k/     a fresh run folder of the shipped EN-DE recipe (config.json and tokenizer.json of
 *                 models/multi30k-en-de, no weights) with Multi30K's train and val ids.
 *   npx tsx scripts/gpu-check/fixture.ts DIR
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { makeCorpus, makeRun } from '../../test/python/setup.ts';
import { encodeSplit } from '../../src/cli/commands/data.ts';
import { writeSafetensors } from '../../src/io/safetensors.ts';
import { copyFolderFiles, readJsonIn } from '../../src/folder/node.ts';
import { FILES, type ModelConfigFile } from '../../src/folder/spec.ts';

const dir = resolve(process.argv[2] ?? 'gpu-fx');
const tiny = join(dir, 'tiny');
mkdirSync(tiny, { recursive: true });
const fx = makeRun(tiny, makeCorpus(join(tiny, 'corpus')));
const losses: number[] = [];
for (let i = 0; i < 5; i++) losses.push(fx.trainer.step().loss);
writeFileSync(join(tiny, 'qkv-losses.json'), `${JSON.stringify({ losses, dModel: fx.model.config.dModel })}\n`);
writeFileSync(join(tiny, 'qkv-step5.safetensors'), writeSafetensors(fx.model.stateDict()));

const m30k = join(dir, 'm30k');
const run = join(m30k, 'run');
mkdirSync(run, { recursive: true });
// The shipped folder's config without its ensemble members (the run is one model): beam 4, α 0.6; its tokenizer.
const shipped = 'models/multi30k-en-de';
const config = readJsonIn(shipped, FILES.config) as ModelConfigFile;
copyFolderFiles(shipped, run, { config: { ...config, decoding: { beam: 4, alpha: 0.6 } } });
const log = (s: string) => console.error(s);
for (const split of ['train', 'val']) {
  encodeSplit({ model: run, data: 'data/multi30k', split, src: 'en', tgt: 'de', out: join(m30k, `${split}.ids`), log });
}
console.error(`wrote ${dir}: qkv's 5 losses ${losses.map((l) => l.toFixed(6)).join(', ')}`);
