/**
 * `pipeline('text2text-generation', folder)` for a Hugging Face T5 / Flan-T5 folder (transformers.js's task and
 * result shape: one `{ generated_text }` per input): each text encoded by the folder's tokenizer (`</s>` appended),
 * decoded by transformers' generate() rules from the folder's generation_config.json (decode/hf-search.ts over
 * decode/t5-stepper.ts), the output's special tokens dropped. Unlike the translation pipeline, an empty string is
 * given to the model as transformers gives it (`</s>` alone).
 */
import { noGrad } from '../autograd/grad-mode.ts';
import { generateHfSteps, hfRules } from '../decode/hf-search.ts';
import { T5Stepper } from '../decode/t5-stepper.ts';
import type { OpenedT5 } from '../folder/open.ts';
import type { T5 } from '../models/hf/t5.ts';
import * as F from '../ops/index.ts';
import { Tensor } from '../tensor/tensor.ts';
import type { HfTokenizer } from '../text/hf-tokenizer.ts';
import { checkOptions, describeValue, type OptionSpec } from './options.ts';

/** Per-call options of a {@link Text2TextPipeline} (each defaults to the folder's generation config). */
export interface Text2TextOptions {
  /** Beams, 1 = greedy (num_beams). */
  beam?: number;
  /** Most ids generated, EOS included (max_new_tokens). */
  maxNewTokens?: number;
}

const TEXT2TEXT_OPTIONS: OptionSpec = { beam: 'positiveInt', maxNewTokens: 'positiveInt' };

/** One result, transformers.js's shape. */
export interface Text2TextResult {
  generated_text: string;
}

/** What `pipeline('text2text-generation', folder)` gives. */
export interface Text2TextPipeline {
  /** `[{ generated_text }]` for one text, one entry per text for several. */
  (input: string | readonly string[], options?: Text2TextOptions): Promise<Text2TextResult[]>;
  readonly task: 'text2text-generation';
  readonly model: T5;
  readonly tokenizer: HfTokenizer;
  /** config.json as read. */
  readonly config: Record<string, unknown>;
}

/** The text2text pipeline of an opened T5 folder. */
export function text2textPipeline(opened: OpenedT5): Text2TextPipeline {
  const { model, tokenizer, config, ids, generation } = opened;
  const run = async (input: string | readonly string[], options: Text2TextOptions = {}): Promise<Text2TextResult[]> => {
    checkOptions('text2text-generation', options, TEXT2TEXT_OPTIONS);
    const texts = typeof input === 'string' ? [input] : input;
    if (!Array.isArray(texts) && typeof input !== 'string')
      throw new Error(`text2text-generation: expected a string or an array of strings, got ${describeValue(input)}`);
    const out: Text2TextResult[] = [];
    texts.forEach((t, i) => {
      if (typeof t !== 'string')
        throw new Error(`text2text-generation: input ${i}: expected a string, got ${describeValue(t)}`);
    });
    for (const text of texts) {
      const src = tokenizer.encodeInput(text).ids;
      const res = noGrad(() => {
        const srcT = new Tensor(Int32Array.from(src), [1, src.length], 'int32');
        const memory = model.encode(srcT);
        return generateHfSteps(new T5Stepper(model, memory, F.eq(srcT, ids.padId)), 1, {
          ...hfRules(ids, generation),
          numBeams: options.beam ?? generation.numBeams,
          lengthPenalty: generation.lengthPenalty,
          ...(options.maxNewTokens !== undefined && { maxLength: options.maxNewTokens + 1 }),
          padId: ids.padId,
        });
      });
      out.push({ generated_text: tokenizer.decode(res.tokens[0], { skipSpecialTokens: true }) });
    }
    return out;
  };
  return Object.assign(run, { task: 'text2text-generation' as const, model, tokenizer, config }) as Text2TextPipeline;
}
