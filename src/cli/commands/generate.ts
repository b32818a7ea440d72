/** `qkv generate`: a prompt continued by a language model folder (qkv train-lm, or Hugging Face GPT-2), streamed. */
import { Command } from '@commander-js/extra-typings';
import { generateStream, generateStreamAsync } from '../../decode/gpt.ts';
import { idsText, promptIds } from '../../folder/gpt.ts';
import { BpeTokenizer } from '../../text/bpe.ts';
import { CharTokenizer } from '../../text/chars.ts';
import { int, nonNegativeInt, nonNegativeNumber, probability } from '../args.ts';
import { loadLmDir, loadLmShape, UserError } from '../files.ts';
import { openOnnxGpt, parseEngine } from '../onnxruntime.ts';
import { engineOption, log, modelOption, type FlagsOf, type Optional } from '../options.ts';

function flags() {
  const cmd = new Command('generate').description(
    'continue a prompt with a language model from train-lm, streaming to stdout',
  );
  const options = modelOption(cmd)
    .requiredOption('--prompt <text>', 'text to continue')
    .option('--max-tokens <n>', 'tokens to generate', int('--max-tokens'), 200)
    .option('--temperature <t>', 'softmax temperature (0 = greedy)', nonNegativeNumber('--temperature'), 0.8)
    .option('--top-k <k>', 'sample among the k most probable tokens', int('--top-k'))
    .option('--top-p <p>', 'sample among the most probable tokens that make up probability p', probability('--top-p'))
    .option('--seed <n>', 'random seed (default: random, printed)', nonNegativeInt('--seed'))
    .option('--no-cache', 'recompute the whole context at every step instead of using the KV cache');
  return engineOption(options);
}

export function generateCommand() {
  return flags().action(async (o) => generateText({ ...o, log }));
}

/**
 * `qkv generate`'s options; engine defaults to qkv when called from code, and `write` says where the text goes
 * (default: stdout).
 */
export type GenerateArgs = Optional<FlagsOf<typeof flags>, 'engine'> & {
  log: (line: string) => void;
  write?: (text: string) => void;
};

export async function generateText(a: GenerateArgs): Promise<void> {
  if (a.prompt === '') throw new UserError('--prompt is empty: give some text to continue');
  const onnx = parseEngine(a.engine) === 'onnxruntime' ? await openOnnxGpt(a.model) : null;
  const { model, tokenizer, separatorId } = onnx ? loadLmShape(a.model) : loadLmDir(a.model);
  const blockSize = model.config.blockSize;
  // Each line of the prompt ends with the separator, as in training; the first starts after one
  // (a line start) when there is room for it.
  const ids = promptIds(tokenizer, a.prompt, separatorId);
  if (ids.length > blockSize)
    throw new UserError(`the prompt is ${ids.length} tokens long; this model's context holds ${blockSize}`);
  if (tokenizer instanceof CharTokenizer || tokenizer instanceof BpeTokenizer) {
    const unknown = ids.filter((id) => id === tokenizer.unkId).length;
    if (unknown > 0)
      a.log(`warning: ${unknown} prompt token(s) are not in the model's vocabulary (encoded as unknown)`);
  }
  const prompt = ids.length < blockSize ? [separatorId, ...ids] : ids;
  const seed = a.seed ?? Math.floor(Math.random() * 2 ** 31);
  const write = a.write ?? ((s: string) => process.stdout.write(s));
  const all = ids.slice(); // the prompt and what follows it, as shown
  let shown = idsText(tokenizer, all, separatorId);
  write(shown);
  const t0 = performance.now();
  let n = 0;
  const options = {
    maxTokens: a.maxTokens,
    temperature: a.temperature,
    topK: a.topK,
    topP: a.topP,
    seed,
    useCache: a.cache,
  };
  for await (const t of onnx ? generateStreamAsync(onnx, prompt, options) : generateStream(model, prompt, options)) {
    all.push(t.id);
    n++;
    const text = idsText(tokenizer, all, separatorId);
    write(text.slice(shown.length));
    shown = text;
  }
  if (!shown.endsWith('\n')) write('\n');
  const s = (performance.now() - t0) / 1000;
  a.log(
    `${n} tokens in ${s.toFixed(2)} s ` +
      `(${((1000 * s) / Math.max(1, n)).toFixed(1)} ms/token, ` +
      `${a.cache ? 'KV cache' : 'no cache'}${onnx ? ', ONNX Runtime' : ''})` +
      (a.temperature > 0 ? `, seed ${seed}` : ''),
  );
}
