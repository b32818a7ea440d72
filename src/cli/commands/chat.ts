/**
 * `qkv chat`: a conversation with a Hugging Face chat model folder (a chat template: chat_template.jinja or
 * tokenizer_config.json's chat_template), one user message per stdin line, each reply streamed to stdout, through
 * the text-generation pipeline library users call with chat messages. The KV cache is kept between turns: each turn
 * the whole conversation is rendered and tokenized again (as transformers would), and only what follows the longest
 * common prefix of the cached tokens and the new ones is fed, the cache cropped to that prefix first where it holds
 * more (the reply's text tokenizes otherwise than the tokens drawn, or a template rewrites earlier turns).
 */
import { Command } from '@commander-js/extra-typings';
import { createInterface } from 'node:readline';
import { generateStream, KeptCache } from '../../decode/gpt.ts';
import { textGenerationPipeline } from '../../pipelines/text-generation.ts';
import { ByteLevelBpeTokenizer } from '../../text/bytelevel.ts';
import type { ChatMessage } from '../../text/chat-template.ts';
import { loadLmDir, UserError } from '../files.ts';
import { adapterOption, dtypeOption, log, modelOption, type FlagsOf, type Optional } from '../options.ts';
import { withDType } from '../decoding.ts';
import { generationOptions, samplingOptions } from './generate.ts';

function flags() {
  const cmd = new Command('chat').description(
    'a conversation with a Hugging Face chat model folder: one message per stdin line, replies streamed to stdout',
  );
  const options = samplingOptions(
    modelOption(cmd)
      .option('--system <text>', "a system message opening the conversation (default: none, or the template's own)")
      .option('--json', 'one JSON object per reply on its own line instead of the text', false),
  );
  return adapterOption(dtypeOption(options));
}

export function chatCommand() {
  return flags().action(async (o) => chat({ ...o, log }));
}

/**
 * `qkv chat`'s options; `input` gives the user's lines (default: stdin's) and `write` where the replies go (default:
 * stdout).
 */
export type ChatArgs = Optional<FlagsOf<typeof flags>, 'json'> & {
  log: (line: string) => void;
  write?: (text: string) => void;
  input?: AsyncIterable<string>;
};

/** What `--json` writes for each reply. */
export interface ChatTurnJson {
  role: 'assistant';
  content: string;
  /** Tokens generated. */
  tokens: number;
  /** The conversation's tokens (the reply's prompt) and how many of them came from the KV cache. */
  promptTokens: number;
  reused: number;
}

export async function chat(a: ChatArgs): Promise<void> {
  const lm = loadLmDir(a.model, a.adapter);
  withDType(a, [lm.model]);
  if (!(lm.tokenizer instanceof ByteLevelBpeTokenizer) || !lm.tokenizer.chatTemplate || !lm.generation)
    throw new UserError(
      `${a.model}: this folder has no chat template (no chat_template.jinja, no chat_template in ` +
        'tokenizer_config.json): qkv generate continues a text prompt',
    );
  const write = a.write ?? ((s: string) => process.stdout.write(s));
  const kept = new KeptCache();
  let promptTokens = 0;
  const generate = textGenerationPipeline(lm, {
    tokens: (context, o) => {
      promptTokens = context.length;
      return generateStream(lm.model, context, o, kept);
    },
    names: { prompt: 'the message', prefix: '' },
  });
  const opening: ChatMessage[] = a.system === undefined ? [] : [{ role: 'system', content: a.system }];
  let messages = opening.slice();
  const seed = a.seed ?? Math.floor(Math.random() * 2 ** 31);
  const hf = lm.generation;
  const sampling = (a.temperature ?? (hf.doSample ? hf.temperature : 0)) > 0;
  const tty = a.input === undefined && process.stdin.isTTY === true;
  const rl = a.input ? null : createInterface({ input: process.stdin, terminal: false });
  if (tty) a.log('one message per line; /reset starts the conversation over; Ctrl-D ends it');
  let turn = 0;
  try {
    for await (const raw of a.input ?? rl!) {
      const line = raw.replace(/\r$/, '');
      if (line.trim() === '') continue;
      if (line.trim() === '/reset') {
        messages = opening.slice();
        kept.release();
        a.log('conversation reset');
        continue;
      }
      messages.push({ role: 'user', content: line });
      let n = 0;
      const t0 = performance.now();
      // Each turn its own seed (seed, seed + 1, …): a sampled reply does not repeat the draws of the one before.
      const [{ generated_text }] = await generate(messages, {
        ...generationOptions(a, seed + turn),
        onWarning: (w) => a.log(`warning: ${w.message}`),
        onToken: (piece) => {
          n++;
          if (!a.json) write(piece);
        },
      });
      const reply = generated_text.at(-1)!;
      messages.push(reply);
      turn++;
      if (a.json) {
        const out: ChatTurnJson = {
          role: 'assistant',
          content: reply.content,
          tokens: n,
          promptTokens,
          reused: kept.reused,
        };
        write(`${JSON.stringify(out)}\n`);
      } else write('\n');
      const s = (performance.now() - t0) / 1000;
      const dropped =
        kept.dropped > 0 ? ` (${kept.dropped} cached tokens after them dropped: the new rendering differs there)` : '';
      a.log(
        `${n} tokens in ${s.toFixed(2)} s; ${kept.reused} of the conversation's ${promptTokens} tokens from the KV ` +
          `cache${dropped}${sampling ? `, seed ${seed + turn - 1}` : ''}`,
      );
    }
  } finally {
    rl?.close();
    kept.release();
  }
}
