#!/usr/bin/env node
/**
 * The `qkv` command: the commands of src/cli/commands/, each declaring its own flags, put together.
 * Errors a user can fix (bad flags, missing folders, bad model files) print one line and exit 1,
 * without a stack trace (set QKV_DEBUG=1 to see one). Bad input lines are not errors: translate and
 * eval write one output line per input line, report each over-long line (eval also each empty
 * source line; for translate an empty line is simply an empty line) and exit 2.
 */
import { Command, type CommandUnknownOpts } from '@commander-js/extra-typings';
import { backendReady, getBackend } from '../backend/backend.ts';
import { attentionCommand } from './commands/attention.ts';
import { bleuCommand } from './commands/bleu.ts';
import { classifyCommand } from './commands/classify.ts';
import { dataCommand } from './commands/data.ts';
import { embedCommand } from './commands/embed.ts';
import { evalCommand } from './commands/eval.ts';
import { exploreCommand } from './commands/explore.ts';
import { exportCommand } from './commands/export.ts';
import { fillMaskCommand } from './commands/fill-mask.ts';
import { finetuneCommand, mergeCommand } from './commands/finetune.ts';
import { flowCommand } from './commands/flow.ts';
import { generateCommand } from './commands/generate.ts';
import { chatCommand } from './commands/chat.ts';
import { infoCommand } from './commands/info.ts';
import { trainLmCommand } from './commands/train-lm.ts';
import { trainCommand } from './commands/train.ts';
import { summarizeCommand } from './commands/summarize.ts';
import { translateCommand } from './commands/translate.ts';
import { packageVersion } from './version.ts';

const program = new Command()
  .name('qkv')
  .description('The Transformer of "Attention Is All You Need": train, translate, evaluate, inspect.')
  .version(packageVersion())
  .showHelpAfterError('(run with --help for usage)');

/**
 * The program's settings (showHelpAfterError) on a command and its own subcommands: addCommand(), unlike command(),
 * does not copy them.
 */
function inherit(command: CommandUnknownOpts, from: CommandUnknownOpts): void {
  command.copyInheritedSettings(from);
  for (const sub of command.commands) inherit(sub, command);
}

for (const command of [
  trainCommand(),
  dataCommand(),
  translateCommand(),
  summarizeCommand(),
  evalCommand(),
  bleuCommand(),
  infoCommand(),
  exportCommand(),
  trainLmCommand(),
  finetuneCommand(),
  mergeCommand(),
  generateCommand(),
  chatCommand(),
  embedCommand(),
  fillMaskCommand(),
  classifyCommand(),
  attentionCommand(),
  flowCommand(),
  exploreCommand(),
]) {
  inherit(command, program);
  program.addCommand(command);
}

try {
  // A bad QKV_BACKEND or QKV_THREADS is one line before any command runs, even one that computes nothing.
  await backendReady();
  getBackend();
  await program.parseAsync(process.argv);
} catch (e) {
  if (process.env.QKV_DEBUG) throw e;
  process.stderr.write(`qkv: ${(e as Error).message}\n`);
  process.exit(1);
}
