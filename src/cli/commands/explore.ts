/**
 * `qkv explore`: the attention explorer. It serves the page built by Vite (dist/web, `npm run
 * build:web`) and the model folders it is given (every folder under ./models/ by default) with the
 * static server of src/server/static.ts; the page lists them in its model switcher, opens the one
 * chosen through the folder module (src/folder/, from its URL) and runs it in the browser with qkv.
 * Where the page and the default folders are is src/server/folders.ts; here are the command's flags,
 * checks and messages. Every folder is opened through the folder module first, so a bad one is refused
 * before the server starts, with the module's message naming the file.
 */
import { relative, resolve } from 'node:path';
import { Command } from '@commander-js/extra-typings';
import { FILES, type FolderKind } from '../../folder/index.ts';
import { readJsonIn } from '../../folder/node.ts';
import { checkFolder, findDefaultModels, findWebDir, isDir, webIndexPath } from '../../server/folders.ts';
import {
  describeFolder,
  folderIds,
  isLoopback,
  startExploreServer,
  type ExploreServer,
  type ServedFolder,
} from '../../server/static.ts';
import { port } from '../args.ts';
import { asUserError, UserError } from '../files.ts';
import { log, type FlagsOf } from '../options.ts';

/** --model given again adds a folder (commander's collect pattern). */
const collect = (v: string, prev: string[] | undefined): string[] => [...(prev ?? []), v];

function flags() {
  return new Command('explore')
    .description('open the attention explorer: a local page that runs the models in the browser, with a model switcher')
    .option(
      '--model <dir>',
      'model folder to serve; repeat to serve several (default: every folder ' +
        'under models/, else the newest runs/*/ with a model.safetensors)',
      collect,
    )
    .option('--port <n>', 'port (0 = any free port)', port('--port'), 8080)
    .option(
      '--host <addr>',
      'address to listen on (anything but 127.0.0.1 / localhost exposes the models to the network)',
      '127.0.0.1',
    );
}

export function exploreCommand() {
  return flags().action(async (o) => {
    await explore({ ...o, log });
  });
}

/** `qkv explore`'s options: the model folders (--model, repeatable; none: findDefaultModels), port and host. */
export type ExploreArgs = FlagsOf<typeof flags> & { log: (line: string) => void };

const KIND_LINES: Record<FolderKind, string> = {
  seq2seq: 'translation model, Translate view',
  gpt: 'language model, Generate view',
  'hf-gpt2': 'Hugging Face GPT-2, Generate view',
  marian: 'Hugging Face Marian (opus-mt), Translate view',
  m2m100: 'Hugging Face M2M100 / NLLB: not shown by the explorer yet',
  t5: 'Hugging Face T5: not shown by the explorer yet',
  'hf-encoder': 'Hugging Face encoder (BERT family), not shown by the explorer yet',
};

/** The folders to serve, each checked and described through the folder module. */
function servedFolders(given: readonly string[] | undefined, log: (line: string) => void): ServedFolder[] {
  let dirs: string[];
  if (given && given.length > 0) {
    dirs = given.map((d) => resolve(d));
    for (const [i, d] of dirs.entries()) {
      if (!isDir(d)) throw new UserError(`--model ${given[i]}: model folder not found: ${d}`);
    }
    const seen = new Set<string>();
    dirs = dirs.filter((d) => !seen.has(d) && Boolean(seen.add(d)));
  } else {
    dirs = findDefaultModels();
    if (dirs.length === 0) {
      log(`qkv explore: no model found (looked for folders under models/, then runs/*/ with a ${FILES.weights}).`);
      log('  The Translate view needs one: pass --model DIR, or train one with `qkv train --out runs/NAME`');
      log('  (or a language model with `qkv train-lm --out runs/NAME`: the page then shows the Generate view).');
      log('  The positional-encoding and step-by-step views work, and Generate opens a GPT folder from your disk.');
    }
  }
  const ids = folderIds(dirs);
  return dirs.map((d, i) =>
    asUserError(() => {
      checkFolder(d);
      return describeFolder(d, ids[i]);
    }),
  );
}

export async function explore(o: ExploreArgs): Promise<ExploreServer> {
  const webDir = findWebDir();
  if (!webDir) throw new UserError(`the explorer page is not built (no ${webIndexPath()}): run \`npm run build:web\``);
  const models = servedFolders(o.model, o.log);
  const s = await startExploreServer({ webDir, models, host: o.host, port: o.port });
  for (const m of models) {
    const rel = relative(process.cwd(), m.dir);
    o.log(
      `qkv explore: model ` +
        `${rel === '' ? '.' : rel.startsWith('..') ? m.dir : rel} ` +
        `(${KIND_LINES[m.kind!]}: ${m.description})`,
    );
    const members =
      m.kind === 'seq2seq'
        ? (readJsonIn(m.dir, FILES.config) as { decoding?: { ensemble?: string[] } }).decoding?.ensemble
        : undefined;
    if (members)
      o.log(
        `  its ${FILES.config} names an ensemble (${members.join(', ')}) for ` +
          `qkv translate and eval; the page runs and shows the folder's own ` +
          `model alone`,
      );
  }
  if (!isLoopback(o.host))
    o.log(`qkv explore: listening on ${o.host}: anyone who can reach this address can load the page and the models`);
  o.log(`qkv explore: open ${s.url}  (Ctrl-C stops)`);
  return s;
}
