/**
 * pipeline('translation') gives `qkv translate`'s strings byte for byte: 200 Multi30K validation
 * sentences through the shipped EN→DE folder (its ensemble member, beam 4 and α 0.6 from its
 * config.json), the CLI run as a child process on the same lines; and the overrides (beam, α)
 * against the CLI's flags on a shorter cut.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { pipeline } from '../../src/index.ts';
import { multi30kLines, qkv, root } from '../helpers/cli.ts';
import { tempDir } from '../e2e/tiny-model.ts';

const MODEL = join(root, 'models/multi30k-en-de');
const lines = multi30kLines('val.en.gz').slice(0, 200);

function cli(input: string[], flags: string[] = []): string {
  const file = join(tempDir('qkv-pipeline-'), 'val.en');
  writeFileSync(file, `${input.join('\n')}\n`);
  const r = qkv(['translate', '--model', MODEL, '--input', file, ...flags]);
  assert.equal(r.status, 0, r.stderr);
  return r.stdout;
}

test('200 val sentences: the pipeline is byte-identical to qkv translate (ensemble, beam and α from config.json)', async () => {
  assert.equal(lines.length, 200);
  const translate = await pipeline('translation', MODEL);
  assert.equal(translate.members.length, 2, 'the folder names one ensemble member');
  const out = await translate(lines);
  assert.equal(out.length, 200);
  assert.equal(out.map((l) => `${l}\n`).join(''), cli(lines));
});

test('overrides match the CLI flags: beam 1 (greedy), and beam 2 with α 1 without the ensemble', async () => {
  const cut = lines.slice(0, 40);
  const translate = await pipeline('translation', MODEL);
  assert.equal((await translate(cut, { beam: 1 })).map((l) => `${l}\n`).join(''), cli(cut, ['--beam', '1']));
  const alone = await pipeline('translation', MODEL, { ensemble: false });
  assert.equal(alone.members.length, 1);
  assert.equal(
    (await alone(cut, { beam: 2, alpha: 1 })).map((l) => `${l}\n`).join(''),
    cli(cut, ['--beam', '2', '--alpha', '1', '--no-ensemble']),
  );
});
