/**
 * The inputs of scripts/gpu-check/run.sh, written here (no Node on the GPU machine):
 *   DIR/tiny/     the train.py tests' tiny run at step 0 (dropout 0), its train/val ids, and qkv's
 *                 own 5 steps from it: qkv-losses.json and qkv-step5.safetensors;
 *   DIR/m30k/     a fresh run folder of the shipped EN-DE recipe (config.json and tokenizer.json of
 *                 models/multi30k-en-de, no weights) with Multi30K's train and val ids.
 *   npx tsx scripts/gpu-check/fixture.ts DIR
 */
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { makeCorpus, makeRun } from '../../test/python/setup.ts';
import { encodeSplit } from '../../src/cli/commands/data.ts';
import { writeSafetensors } from '../../src/io/safetensors.ts';

const dir = resolve(process.argv[2] ?? 'gpu-fx');
const tiny = join(dir, 'tiny');
mkdirSync(tiny, { recursive: true });
const fx = makeRun(tiny, makeCorpus(join(tiny, 'corpus')));
const losses: number[] = [];
for (let i = 0; i < 5; i++) losses.push(fx.trainer.step().loss);
writeFileSync(join(tiny, 'qkv-losses.json'), JSON.stringify({ losses, dModel: fx.model.config.dModel }) + '\n');
writeFileSync(join(tiny, 'qkv-step5.safetensors'), writeSafetensors(fx.model.stateDict()));

const m30k = join(dir, 'm30k');
const run = join(m30k, 'run');
mkdirSync(run, { recursive: true });
copyFileSync(join('models/multi30k-en-de', 'tokenizer.json'), join(run, 'tokenizer.json'));
// The shipped folder's config without its ensemble members (the run is one model): beam 4, α 0.6.
const config = JSON.parse(readFileSync(join('models/multi30k-en-de', 'config.json'), 'utf8')) as Record<string, unknown>;
writeFileSync(join(run, 'config.json'), JSON.stringify({ ...config, decoding: { beam: 4, alpha: 0.6 } }, null, 2) + '\n');
const log = (s: string) => console.error(s);
for (const split of ['train', 'val']) {
  encodeSplit({ model: run, data: 'data/multi30k', split, src: 'en', tgt: 'de', out: join(m30k, `${split}.ids`), log });
}
console.error(`wrote ${dir}: qkv's 5 losses ${losses.map((l) => l.toFixed(6)).join(', ')}`);
