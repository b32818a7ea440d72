/**
 * `qkv attention`, flags and handler: translate one sentence in Node and draw its attention as SVG
 * (or an HTML page holding the SVG), without a browser. One head (--layer and --head), one layer's heads (--layer),
 * one head across layers (--head), or every layer × head (neither). Given a language model (a
 * `qkv train-lm` folder), the sentence is a prompt: it is continued (greedy) and the causal
 * self-attention over prompt + continuation is drawn the same way.
 */
import { Command } from '@commander-js/extra-typings';
import { int, nonNegativeNumber } from '../args.ts';
import {
  KIND_NAMES,
  marianWithAttention,
  translateWithAttention,
  type AttentionKind,
  type TranslationAttention,
} from '../../viz/attention-data.ts';
import { readMarianDir } from '../../folder/node.ts';
import { standaloneHtml } from '../../viz/compose.ts';
import { mapsGridSvg, mapsHeatmapSvg, mapsSize, type AttentionMaps } from '../../viz/attention-maps.ts';
import { generateWithAttention, gptMaps, gptTitle, type GptTokenizer } from '../../viz/gpt-attention.ts';
import { attentionGridSvg, attentionHeatmapSvg, stackSize } from '../../viz/translation.ts';
import { asUserError, atomicWrite, loadLmDir, loadModelDir, modelDirKind, UserError } from '../files.ts';
import { log, modelOption, type FlagsOf, type Optional } from '../options.ts';

function flags() {
  const cmd = new Command('attention')
    .description(
      'translate a sentence (or continue a prompt, with a language model) ' +
        'and draw its attention heatmaps as SVG (no browser needed)',
    )
    .argument('<sentence>', 'the sentence to translate (a language model: the prompt)');
  return modelOption(cmd)
    .requiredOption('--out <file>', 'SVG file to write (or .html: a page holding the SVG)')
    .option(
      '--kind <kind>',
      'enc (encoder self-attention) | dec (decoder masked self-attention) | cross (decoder to encoder)',
      'cross',
    )
    .option('--layer <n>', 'layer, counted from 1 (default: every layer)', int('--layer'))
    .option('--head <n>', 'head, counted from 1 (default: every head)', int('--head'))
    .option('--beam <n>', 'beam size (1 = greedy)', int('--beam'), 1)
    .option(
      '--alpha <x>',
      "length penalty α of beam search (default 0.6; a Marian folder: HF's length_penalty, default its own)",
      nonNegativeNumber('--alpha'),
    )
    .option('--max-tokens <n>', 'language models: tokens to generate after the prompt', int('--max-tokens'), 20);
}

export function attentionCommand() {
  return flags().action((sentence, o) => attention({ ...o, sentence, log }));
}

/**
 * attention's options: the flags' (`kind` enc | dec | cross, or encoder | decoder; `layer` and `head`
 * counted from 1; `maxTokens` for language models, 20 when left out) and the sentence.
 */
export type AttentionCommandOptions = Optional<FlagsOf<typeof flags>, 'maxTokens'> & {
  sentence: string;
  log: (line: string) => void;
};

const KINDS: Record<string, AttentionKind> = {
  enc: 'encoder',
  encoder: 'encoder',
  dec: 'decoder',
  decoder: 'decoder',
  cross: 'cross',
};

export function parseKind(kind: string): AttentionKind {
  const k = KINDS[kind];
  if (!k) throw new UserError(`--kind must be enc, dec or cross, got '${kind}'`);
  return k;
}

export function attention(o: AttentionCommandOptions): void {
  if (!/\.(svg|html?)$/i.test(o.out)) throw new UserError(`--out must end in .svg or .html, got '${o.out}'`);
  if (o.sentence.trim() === '') throw new UserError('the sentence is empty');
  const dirKind = modelDirKind(o.model);
  if (dirKind === 'gpt') return languageModelAttention(o);
  const kind = parseKind(o.kind);
  let t: TranslationAttention;
  if (dirKind === 'marian') {
    // Hugging Face's generate() rules; --alpha is HF's length_penalty exponent here (default: the folder's).
    t = marianWithAttention(
      asUserError(() => readMarianDir(o.model)),
      o.sentence,
      {
        beam: o.beam,
        ...(o.alpha !== undefined && { alpha: o.alpha }),
      },
    );
  } else {
    const { model, tokenizer, targetTokenizer } = loadModelDir(o.model);
    t = translateWithAttention(model, tokenizer, o.sentence, {
      beam: o.beam,
      alpha: o.alpha ?? 0.6,
      ...(targetTokenizer !== tokenizer && { targetTokenizer }),
    });
  }
  if (t.truncatedFrom !== undefined)
    o.log(`qkv: the sentence has ${t.truncatedFrom} tokens, truncated to the ${t.srcIds.length} this model reads`);
  o.log(`"${t.source}" → "${t.translation}"`);
  const { layers, heads } = stackSize(t, kind);
  if (layers === 0) throw new UserError(`the translation is empty: there is no ${KIND_NAMES[kind]} to draw`);
  if (o.layer !== undefined && (o.layer < 1 || o.layer > layers))
    throw new UserError(`--layer ${o.layer} does not exist: the ${KIND_NAMES[kind]} has layers 1..${layers}`);
  if (o.head !== undefined && (o.head < 1 || o.head > heads))
    throw new UserError(`--head ${o.head} does not exist: this model has heads 1..${heads}`);
  let svg: string;
  let what: string;
  if (o.layer !== undefined && o.head !== undefined) {
    svg = attentionHeatmapSvg(t, kind, o.layer - 1, o.head - 1);
    what = `layer ${o.layer}, head ${o.head}`;
  } else {
    const ls = o.layer !== undefined ? [o.layer - 1] : undefined;
    const hs = o.head !== undefined ? [o.head - 1] : undefined;
    svg = attentionGridSvg(t, kind, ls, hs);
    what =
      `${o.layer !== undefined ? `layer ${o.layer}` : `${layers} layers`} × ` +
      `${o.head !== undefined ? `head ${o.head}` : `${heads} heads`}`;
  }
  const body = /\.html?$/i.test(o.out)
    ? standaloneHtml(`${KIND_NAMES[kind]}: ${t.source}`, svg)
    : `<?xml version="1.0" encoding="UTF-8"?>\n${svg}\n`;
  atomicWrite(o.out, body);
  o.log(`wrote ${o.out}: ${KIND_NAMES[kind]}, ${what}`);
  process.stdout.write(`${t.translation}\n`);
}

/** The GPT case: continue the prompt, draw the causal self-attention over prompt + continuation. */
function languageModelAttention(o: AttentionCommandOptions): void {
  const maxTokens = o.maxTokens ?? 20;
  const { model, tokenizer, separatorId } = loadLmDir(o.model);
  let g: ReturnType<typeof generateWithAttention>;
  try {
    // loadLmDir builds a CharTokenizer or a BpeTokenizer, per config.json.
    g = generateWithAttention({ model, tokenizer: tokenizer as GptTokenizer, separatorId }, o.sentence, { maxTokens });
  } catch (e) {
    throw new UserError((e as Error).message);
  }
  o.log(
    `"${g.prompt}" → ` +
      `"${g.continuation}"${g.cut ? ` (cut to fit the model's context of ${model.config.blockSize})` : ''}`,
  );
  const maps: AttentionMaps = gptMaps(g);
  const { layers, heads } = mapsSize(maps);
  if (o.layer !== undefined && (o.layer < 1 || o.layer > layers))
    throw new UserError(`--layer ${o.layer} does not exist: this model has layers 1..${layers}`);
  if (o.head !== undefined && (o.head < 1 || o.head > heads))
    throw new UserError(`--head ${o.head} does not exist: this model has heads 1..${heads}`);
  const svg =
    o.layer !== undefined && o.head !== undefined
      ? mapsHeatmapSvg(maps, o.layer - 1, o.head - 1)
      : mapsGridSvg(
          maps,
          gptTitle(g),
          o.layer !== undefined ? [o.layer - 1] : undefined,
          o.head !== undefined ? [o.head - 1] : undefined,
        );
  const what =
    `${o.layer !== undefined ? `layer ${o.layer}` : `${layers} layers`} × ` +
    `${o.head !== undefined ? `head ${o.head}` : `${heads} heads`}`;
  const body = /\.html?$/i.test(o.out)
    ? standaloneHtml(`${maps.name}: ${g.prompt}`, svg)
    : `<?xml version="1.0" encoding="UTF-8"?>\n${svg}\n`;
  atomicWrite(o.out, body);
  o.log(`wrote ${o.out}: ${maps.name}, ${what}`);
  process.stdout.write(`${g.prompt}${g.continuation}\n`);
}
