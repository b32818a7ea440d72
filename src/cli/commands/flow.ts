/**
 * `qkv flow`, flags and handler: one forward pass of a model over a sentence as a flow of stages
 * (viz/flow.ts: embeddings and positions, each layer's attention, residuals, layer norms and
 * feed-forward block, the logits and the softmax), printed as JSON on stdout: the numbers the
 * explorer's Flow view draws, for the same model and sentence. A translator's decoder is fed --target
 * (after the start token), or else the model's greedy translation; a language model reads the
 * sentence as its prompt; a BERT-family encoder reads it whole (its special tokens added).
 */
import { Command } from '@commander-js/extra-typings';
import { InvalidArgumentError } from 'commander';
import { readEncoderDir, readMarianDir } from '../../folder/node.ts';
import { textFlow, FLOW_DIMS, FLOW_TOP, type FlowSubject, type FlowText, type ModelFlow } from '../../viz/flow.ts';
import { int } from '../args.ts';
import { asUserError, folderKindOfDir, loadLmDir, loadModelDir, modelDirKind, UserError } from '../files.ts';
import { readForCurrentDevice } from '../../pipelines/load.ts';
import { log, modelOption, type FlagsOf, type Optional } from '../options.ts';

/** Comma-separated stage ids, or `all`. */
function stageList(name: string): (v: string) => string[] {
  return (v) => {
    const xs = v.split(',').map((x) => x.trim());
    if (xs.some((x) => x === ''))
      throw new InvalidArgumentError(`${name} must be comma-separated stage ids (e.g. enc.0.attn,logits), got '${v}'`);
    return xs;
  };
}

function flags() {
  const cmd = new Command('flow')
    .description(
      "print one forward pass of a model over a sentence as JSON: every stage's numbers " +
        '(embedding, positions, attention per head, residuals, layer norms, feed-forward, logits, softmax)',
    )
    .argument('<sentence>', 'the sentence (a language model: the prompt)');
  return modelOption(cmd)
    .option(
      '--target <text>',
      "translators: the decoder's input after the start token (default: the model's greedy translation)",
    )
    .option('--dims <n>', 'leading components printed per vector', int('--dims'), FLOW_DIMS)
    .option('--top <n>', 'most probable next tokens printed per position', int('--top'), FLOW_TOP)
    .option(
      '--stages <ids>',
      'print only these stages (comma-separated ids, e.g. enc.0.attn,logits)',
      stageList('--stages'),
    )
    .option(
      '--full <ids>',
      "add every component of these stages' vectors (comma-separated ids, or all)",
      stageList('--full'),
    );
}

export function flowCommand() {
  return flags().action((sentence, o) => {
    process.stdout.write(`${JSON.stringify(flow({ ...o, sentence, log }))}\n`);
  });
}

/** flow's options: the flags' (dims and top defaulting as the flags do) and the sentence. */
export type FlowCommandOptions = Optional<FlagsOf<typeof flags>, 'dims' | 'top'> & {
  sentence: string;
  log: (line: string) => void;
};

/** What `qkv flow` prints: the flow, what it was run on, and the full vectors asked for by stage id. */
export type FlowJson = ModelFlow & { text: FlowText; full?: Record<string, number[][]> };

/** The model of a folder as viz/flow.ts reads it. */
function subjectOf(dir: string): FlowSubject {
  if (folderKindOfDir(dir) === 'hf-encoder')
    return { kind: 'encoder', encoder: asUserError(() => readForCurrentDevice(() => readEncoderDir(dir))) };
  const kind = modelDirKind(dir);
  if (kind === 'gpt') return { kind: 'gpt', lm: loadLmDir(dir) };
  if (kind === 'marian') return { kind: 'marian', marian: asUserError(() => readMarianDir(dir)) };
  const { model, tokenizer, targetTokenizer } = loadModelDir(dir);
  return { kind: 'seq2seq', model, tokenizer, targetTokenizer };
}

/** The flow of `o.sentence` on `o.model` (see the file comment). */
export function flow(o: FlowCommandOptions): FlowJson {
  const subject = subjectOf(o.model);
  let run: ReturnType<typeof textFlow>;
  try {
    run = textFlow(subject, o.sentence, { target: o.target, dims: o.dims, top: o.top });
  } catch (e) {
    throw new UserError((e as Error).message);
  }
  const ids = run.flow.stages.map((s) => s.id);
  const known = (list: string[], flag: string) => {
    for (const id of list)
      if (id !== 'all' && !ids.includes(id))
        throw new UserError(`${flag}: no stage '${id}' in this model's flow (stages: ${ids.join(', ')})`);
  };
  const only = o.stages ?? null;
  if (only) known(only, '--stages');
  if (o.full) known(o.full, '--full');
  const stages = only && !only.includes('all') ? run.flow.stages.filter((s) => only.includes(s.id)) : run.flow.stages;
  const out: FlowJson = { ...run.flow, stages, text: run.text };
  if (o.full) {
    const want = o.full.includes('all') ? stages.map((s) => s.id) : o.full;
    out.full = Object.fromEntries(want.map((id) => [id, run.vectors(id)]));
  }
  const t = run.text;
  const n = `${stages.length} stage${stages.length === 1 ? '' : 's'}`;
  const fed =
    t.target === undefined ? '' : ` → decoder fed "${t.target}"${t.translated ? ' (the greedy translation)' : ''}`;
  o.log(`"${t.text}"${fed}: ${n}`);
  return out;
}
