/** `qkv explore`: its flags. The command's lookups and checks are cli/explore.ts's, the server src/server/static.ts. */
import { Command } from '@commander-js/extra-typings';
import { port } from '../args.ts';
import { explore, type ExploreCommandOptions } from '../explore.ts';
import { handledBy, log } from '../options.ts';

/** --model given again adds a folder (commander's collect pattern). */
const collect = (v: string, prev: string[] | undefined): string[] => [...(prev ?? []), v];

export function exploreCommand() {
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
    )
    .action(async (o) => {
      await explore({ ...handledBy<ExploreCommandOptions>()(o), log });
    });
}
