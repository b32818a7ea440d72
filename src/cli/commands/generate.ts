/**
 * `qkv generate`: a prompt continued by a language model folder (qkv train-lm, or Hugging Face
 * GPT-2), streamed, through the text-generation pipeline library users call.
 */
import { Command, type OptionValues } from '@commander-js/extra-typings';
import { readFileSync } from 'node:fs';
import { generateStreamAsync } from '../../decode/gpt.ts';
import { generateStreamCompiled } from '../../decode/static-gpt.ts';
import { textGenerationPipeline, type GenerationOptions } from '../../pipelines/text-generation.ts';
import { int, nonNegativeInt, nonNegativeNumber, num, probability } from '../args.ts';
import { loadLmDir, loadLmShape, UserError } from '../files.ts';
import { openOnnxGpt, parseEngine } from '../onnxruntime.ts';
import { adapterOption, dtypeOption, engineOption, log, modelOption, type FlagsOf, type Optional } from '../options.ts';
import { noOnnxDType, withDType } from '../decoding.ts';

function flags() {
  const cmd = new Command('generate').description(
    'continue a prompt with a language model from train-lm, streaming to stdout',
  );
  const options = samplingOptions(
    modelOption(cmd).requiredOption('--prompt <text>', 'text to continue; - reads it from stdin'),
  );
  return engineOption(adapterOption(dtypeOption(options))).option(
    '--compiled',
    'decode over a static KV cache with captured, replayed steps instead of the dynamic cache op by op ' +
      '(the same tokens; off by default: not faster yet, docs/compiled.md)',
  );
}

/** The flags of how tokens are drawn, `qkv generate`'s and `qkv chat`'s: the pipeline's generation options. */
/**
 * The values of {@link samplingOptions}'s flags, as commander parses them (a type, not an interface: commander's
 * option values must take an index signature, which only a type literal gives implicitly).
 */
export type SamplingFlags = {
  maxTokens?: number;
  temperature?: number;
  topK?: number;
  topP?: number;
  repetitionPenalty?: number;
  stop?: string[];
  seed?: number;
  cache: boolean;
};

/**
 * Its return type is written out (the flags' values as SamplingFlags): inferred through eight `.option` calls on a
 * generic Command, it made TypeScript's checker run for minutes (tsc, typedoc).
 */
export function samplingOptions<A extends unknown[], O extends OptionValues, G extends OptionValues>(
  cmd: Command<A, O, G>,
): Command<A, O & SamplingFlags, G> {
  return (cmd as unknown as Command<A, OptionValues, G>)
    .option(
      '--max-tokens <n>',
      "tokens to generate (default 200; a Hugging Face folder: its generation_config.json's, as generate())",
      int('--max-tokens'),
    )
    .option(
      '--temperature <t>',
      'softmax temperature, 0 = greedy (default 0.8; a Hugging Face folder: greedy unless its do_sample)',
      nonNegativeNumber('--temperature'),
    )
    .option('--top-k <k>', 'sample among the k most probable tokens', int('--top-k'))
    .option('--top-p <p>', 'sample among the most probable tokens that make up probability p', probability('--top-p'))
    .option(
      '--repetition-penalty <r>',
      'divide the logits of tokens already in the text by r (default 1; a Hugging Face folder: its own)',
      num('--repetition-penalty'),
    )
    .option(
      '--stop <text>',
      "stop once the text holds it (transformers' stop_strings; repeat the flag for several)",
      (v: string, prev: string[] | undefined) => [...(prev ?? []), v],
    )
    .option('--seed <n>', 'random seed (default: random, printed)', nonNegativeInt('--seed'))
    .option(
      '--no-cache',
      'recompute the whole context at every step instead of using the KV cache',
    ) as unknown as Command<A, O & SamplingFlags, G>;
}

export function generateCommand() {
  return flags().action(async (o) => generateText({ ...o, log }));
}

/**
 * `qkv generate`'s options; engine defaults to qkv when called from code, and `write` says where the text goes
 * (default: stdout).
 */
export type GenerateArgs = Optional<FlagsOf<typeof flags>, 'engine' | 'compiled'> & {
  log: (line: string) => void;
  write?: (text: string) => void;
};

export async function generateText(a: GenerateArgs): Promise<void> {
  const prompt = a.prompt === '-' ? readPrompt() : a.prompt;
  // Before the model is read, so that nothing is loaded for nothing (the pipeline says the same).
  if (prompt === '') throw new UserError('--prompt is empty: give some text to continue');
  const onnx = parseEngine(a.engine) === 'onnxruntime' ? await openOnnxGpt(a.model) : null;
  if (onnx && a.dtype) throw noOnnxDType();
  if (onnx && a.adapter) throw new UserError('--adapter runs on the qkv engine only: merge it first (qkv merge)');
  const lm = onnx ? loadLmShape(a.model) : loadLmDir(a.model, a.adapter);
  if (!onnx) withDType(a, [lm.model]); // --dtype: the pipeline option, mapped as translate maps it
  const write = a.write ?? ((s: string) => process.stdout.write(s));
  let t0 = 0;
  let shown = ''; // the prompt read back and what follows it, as written
  // The pipeline users call (src/pipelines/), on ONNX Runtime's graph with --engine onnxruntime; it
  // writes the prompt as its ids read back once the prompt is checked.
  const generate = textGenerationPipeline(lm, {
    tokens: (context, o) =>
      onnx ? generateStreamAsync(onnx, context, o) : generateStreamCompiled(lm.model, context, o),
    names: { prompt: '--prompt', prefix: '' },
    onPrompt: (text) => {
      shown = text;
      write(text);
      t0 = performance.now();
    },
  });
  const seed = a.seed ?? Math.floor(Math.random() * 2 ** 31);
  let n = 0;
  // The temperature that draws: the flag, else the folder's (a Hugging Face folder's do_sample), else qkv's 0.8.
  const hf = lm.generation;
  const temperature = a.temperature ?? (hf ? (hf.doSample ? hf.temperature : 0) : 0.8);
  await generate(prompt, {
    ...generationOptions(a, seed),
    compiled: a.compiled,
    onWarning: (w) => a.log(`warning: ${w.message}`),
    onToken: (piece) => {
      n++;
      shown += piece;
      write(piece);
    },
  });
  if (!shown.endsWith('\n')) write('\n');
  const s = (performance.now() - t0) / 1000;
  a.log(
    `${n} tokens in ${s.toFixed(2)} s ` +
      `(${((1000 * s) / Math.max(1, n)).toFixed(1)} ms/token, ` +
      `${a.cache ? 'KV cache' : 'no cache'}${onnx ? ', ONNX Runtime' : ''})` +
      (temperature > 0 ? `, seed ${seed}` : ''),
  );
}

/**
 * The pipeline options the flags ask for, in one place: past the model's context as the CLI always
 * generated (the context cut as it fills), with a seed chosen here so that it can be printed.
 */
export function generationOptions(
  a: Pick<GenerateArgs, 'maxTokens' | 'temperature' | 'topK' | 'topP' | 'repetitionPenalty' | 'stop' | 'cache'>,
  seed: number,
): GenerationOptions {
  return {
    maxNewTokens: a.maxTokens,
    temperature: a.temperature,
    topK: a.topK,
    topP: a.topP,
    repetitionPenalty: a.repetitionPenalty,
    stopStrings: a.stop,
    seed,
    useCache: a.cache,
    beyondContext: true,
  };
}

/** `--prompt -`: the prompt from stdin, without its final line end (as `echo` writes it). */
function readPrompt(): string {
  return readFileSync(0, 'utf8').replace(/\r?\n$/, '');
}
