/**
 * The whole model as a flow (the Transformer Explainer's view, on every model qkv loads): the entry; a
 * BERT-family encoder's flow is flow-encoder.ts's, reached through `textFlow` on its folder.
 * `modelFlow(model, input)` runs one forward pass of a Seq2Seq (source and decoder input ids) or a
 * GPT (ids) and returns its stages (flow-core.ts describes them; flow-seq2seq.ts and flow-gpt.ts
 * build them). `textFlow(subject, text)` starts from text as `qkv flow` and the explorer's Flow view
 * do: the sentence tokenized as the model's folder says, and for a translator the decoder fed either a
 * given target prefix or the model's own greedy translation (so row t of the decoder is the position
 * that produced output token t, and the flow's top token there is that token).
 */
import { noGrad } from '../autograd/grad-mode.ts';
import { generateHf } from '../decode/hf-search.ts';
import { greedy, type DecodeResult } from '../decode/search.ts';
import { promptContext, type LoadedGpt } from '../folder/gpt.ts';
import type { LoadedMarian } from '../folder/marian.ts';
import type { OpenedFolder } from '../folder/open.ts';
import { GPT } from '../models/gpt.ts';
import type { Seq2Seq } from '../models/seq2seq.ts';
import { Tensor } from '../tensor/tensor.ts';
import type { BpeTokenizer } from '../text/bpe.ts';
import type { FlowAxis, FlowOptions, FlowRun, FlowStage, ModelFlow, Recorder } from './flow-core.ts';
import { generateHfReading, greedyReading } from './decode-async.ts';
import { encoderTokenLabel, type ExplorerEncoder } from './encoder-attention.ts';
import { recordEncoderFlow } from './flow-encoder.ts';
import { gptFlow, recordGptFlow } from './flow-gpt.ts';
import { recordSeq2seqFlow, seq2seqFlow } from './flow-seq2seq.ts';
import { tokenLabel } from './gpt-attention.ts';
import { averageHeads } from './modelview.ts';

export {
  FLOW_DIMS,
  FLOW_TOP,
  rowsOf,
  type FlowAxis,
  type FlowHead,
  type FlowOptions,
  type FlowRow,
  type FlowRun,
  type FlowStage,
  type FlowStageKind,
  type FlowTokens,
  type FlowTop,
  type ModelFlow,
} from './flow-core.ts';
export { gptFlow, gptFlowAsync } from './flow-gpt.ts';
export { seq2seqFlow, seq2seqFlowAsync } from './flow-seq2seq.ts';

/** The most tokens a flow shows on one axis: a page draws every stage of every token. */
export const FLOW_MAX_TOKENS = 64;

/** What a flow runs on: a Seq2Seq's source and decoder input ids, or a GPT's ids. */
export type FlowInput = { src: readonly number[]; tgt: readonly number[] } | { ids: readonly number[] };

/** One forward pass of `model` over `input` as a flow of stages; its logits are model.forward's. */
export function modelFlow(model: Seq2Seq | GPT, input: FlowInput, options: FlowOptions = {}): FlowRun {
  if (model instanceof GPT) {
    if (!('ids' in input)) throw new Error('flow: a GPT takes { ids }, got { src, tgt }');
    return gptFlow(model, input.ids, options);
  }
  if (!('src' in input)) throw new Error('flow: a Seq2Seq takes { src, tgt }, got { ids }');
  return seq2seqFlow(model, input.src, input.tgt, options);
}

/** A stage without its numbers, with what its thumbnail draws. */
export interface FlowStageOutline extends Omit<FlowStage, 'rows' | 'heads' | 'top'> {
  /** Tokens (rows) of the stage. */
  tokens: number;
  /**
   * The thumbnail's numbers: an attention stage's mean of heads ([query][key]), else the tokens' leading
   * components; at most `maxRows` rows and `maxCols` columns.
   */
  thumb: number[][];
}

/** A flow's outline: everything but the stages' numbers (what a page draws the flow's columns from). */
export interface FlowOutline extends Omit<ModelFlow, 'stages'> {
  stages: FlowStageOutline[];
}

/**
 * The outline of a flow, small whatever the model (a page asks for a stage's numbers when it is opened):
 * a flow of 12 layers × 12 heads over 64 tokens (GPT-2's shape) holds about a million numbers in its stages,
 * its outline under 40 thousand (test/viz/flow-svg.test.ts).
 */
export function flowOutline(flow: ModelFlow, maxRows = 24, maxCols = 16): FlowOutline {
  const stages = flow.stages.map(({ rows, heads, top: _top, ...meta }) => {
    const thumb =
      heads && heads.length > 0
        ? averageHeads(heads.map((h) => h.weights.slice(0, maxRows).map((r) => r.slice(0, maxRows))))
        : rows.slice(0, maxRows).map((r) => r.head.slice(0, maxCols));
    return { ...meta, tokens: rows.length, thumb };
  });
  return { ...flow, stages };
}

/** A model as a folder opens it, with what reads its text. */
export type FlowSubject =
  | { kind: 'seq2seq'; model: Seq2Seq; tokenizer: BpeTokenizer; targetTokenizer: BpeTokenizer }
  | { kind: 'marian'; marian: Pick<LoadedMarian, 'model' | 'tokenizer' | 'ids' | 'generation'> }
  | { kind: 'gpt'; lm: LoadedGpt }
  | { kind: 'encoder'; encoder: ExplorerEncoder };

/** The flow's view of an opened folder (folder/open.ts's openFolder, or the Node readers' with their kind). */
export function flowSubject(opened: OpenedFolder): FlowSubject {
  if (opened.kind === 'marian') return { kind: 'marian', marian: opened };
  if (opened.kind === 'm2m100' || opened.kind === 't5')
    throw new Error(`flow: ${opened.kind === 't5' ? 'a T5' : 'an M2M100 / NLLB'} folder is not drawn yet`);
  if (opened.kind === 'seq2seq') {
    const { model, tokenizer, targetTokenizer } = opened;
    return { kind: 'seq2seq', model, tokenizer, targetTokenizer };
  }
  if (opened.kind === 'hf-encoder') return { kind: 'encoder', encoder: opened };
  // A Hugging Face folder's generation settings kept: its prompt is fed as the text-generation pipeline feeds it.
  const { model, tokenizer, separatorId, generation } = opened;
  return { kind: 'gpt', lm: { model, tokenizer, separatorId, ...(generation && { generation }) } };
}

/** Options of {@link textFlow}. */
export interface TextFlowOptions extends Omit<FlowOptions, 'label'> {
  /**
   * A translator's decoder input after the start token (its tokens, no EOS); empty or absent: the model's
   * greedy translation of the text. Not for a GPT.
   */
  target?: string | null;
}

/** What text a flow was run on. */
export interface FlowText {
  /** The text, trimmed (a GPT's prompt as given). */
  text: string;
  /** A translator: the target prefix given, or the greedy translation (`translated`) fed to the decoder. */
  target?: string;
  /** A translator: the decoder was fed the model's own greedy translation. */
  translated?: boolean;
}

function checkLength(n: number, what: string): void {
  if (n > FLOW_MAX_TOKENS)
    throw new Error(`flow: ${what} is ${n} tokens long; the flow shows at most ${FLOW_MAX_TOKENS}`);
}

/**
 * The flow of a text on a model opened from a folder (see the file comment); `text` says what the
 * decoder was fed. Errors are one line naming what was wrong.
 */
export function textFlow(
  subject: FlowSubject,
  text: string,
  options: TextFlowOptions = {},
): FlowRun & { text: FlowText } {
  const plan = textFlowPlan(subject, text, options);
  return plan.flow(plan.translate?.now() ?? null, false).run;
}

/**
 * {@link textFlow} on every device: a translator's greedy translation and the stages' numbers read back
 * asynchronously (how a model on a GPU is read). On a CPU device the same flow.
 */
export async function textFlowAsync(
  subject: FlowSubject,
  text: string,
  options: TextFlowOptions = {},
): Promise<FlowRun & { text: FlowText }> {
  const plan = textFlowPlan(subject, text, options);
  const { run, rec } = plan.flow(plan.translate ? await plan.translate.later() : null, true);
  await rec.readAll();
  return run;
}

/** A translator's own greedy output: its tokens (no EOS), and whether it ended with EOS. */
interface Translated {
  tokens: number[];
  finished: boolean;
}

/**
 * textFlow's checks and tokens; the greedy translation to run first when a translator is given no target (now, or
 * read back later); and the flow's pass once the decoder's input is known, its numbers read at once or deferred.
 */
function textFlowPlan(
  subject: FlowSubject,
  text: string,
  options: TextFlowOptions,
): {
  translate: { now(): Translated; later(): Promise<Translated> } | null;
  flow(translated: Translated | null, deferred: boolean): { run: FlowRun & { text: FlowText }; rec: Recorder };
} {
  const target = options.target?.trim() ? options.target.trim() : null;
  if (subject.kind === 'encoder') {
    if (target !== null) throw new Error('flow: an encoder has no target: give the text alone');
    if (text.trim() === '') throw new Error('flow: the text is empty');
    const { encoder } = subject;
    // As the pipelines and the encoder views tokenize it: its special tokens, cut to the model's length.
    const row = encoder.tokenizer.encodeInput(text, { maxLength: encoder.maxTokens });
    checkLength(row.ids.length, 'the text');
    const label = (id: number) => encoderTokenLabel(encoder.tokenizer, id);
    return {
      translate: null,
      flow: (_translated, deferred) => {
        const flowOptions = { dims: options.dims, top: options.top, label };
        const { run, rec } = recordEncoderFlow(encoder.model, row.ids, row.typeIds, flowOptions, deferred);
        return { run: { ...run, text: { text } }, rec };
      },
    };
  }
  if (subject.kind === 'gpt') {
    if (target !== null) throw new Error('flow: a GPT has no target: give the prompt alone');
    if (text.trim() === '') throw new Error('flow: the prompt is empty');
    const { lm } = subject;
    const ids = promptContext(lm, text);
    checkLength(ids.length, 'the prompt');
    const label = (id: number) => tokenLabel(lm.tokenizer, id, lm.separatorId);
    return {
      translate: null,
      flow: (_translated, deferred) => {
        const { run, rec } = recordGptFlow(lm.model, ids, { dims: options.dims, top: options.top, label }, deferred);
        return { run: { ...run, text: { text } }, rec };
      },
    };
  }
  const source = text.trim();
  if (source === '') throw new Error('flow: the sentence is empty');
  const model = subject.kind === 'seq2seq' ? subject.model : subject.marian.model;
  const srcIds = (
    subject.kind === 'seq2seq' ? subject.tokenizer.encode(source) : subject.marian.tokenizer.encode(source)
  ).slice(0, model.config.maxLen);
  checkLength(srcIds.length, 'the sentence');
  const src = new Tensor(Int32Array.from(srcIds), [1, srcIds.length], 'int32');
  let start: number;
  let eos: number;
  let given: number[] | null = null;
  let name: { source: (id: number) => string; target: (id: number) => string };
  let decode: (ids: number[]) => string;
  let translate: { now(): Translated; later(): Promise<Translated> };
  const first = (r: DecodeResult): Translated => ({ tokens: r.tokens[0], finished: r.finished[0] });
  if (subject.kind === 'seq2seq') {
    const { tokenizer: tok, targetTokenizer: tgt } = subject;
    start = tgt.bosId;
    eos = tgt.eosId;
    if (target !== null) given = tgt.encode(target);
    name = { source: (id) => tok.idToToken(id) ?? `#${id}`, target: (id) => tgt.idToToken(id) ?? `#${id}` };
    decode = (ids) => tgt.decode(ids);
    const ids = { bosId: start, eosId: eos };
    translate = {
      now: () => first(noGrad(() => greedy(model, src, ids))),
      later: async () => first(await greedyReading(model, src, srcIds, ids)),
    };
  } else {
    const { tokenizer: tok, ids, generation: g } = subject.marian;
    start = ids.decoderStartId;
    eos = ids.eosId;
    // encodeTarget appends </s>: a prefix is the ids before it.
    if (target !== null) given = tok.encodeTarget(target).slice(0, -1);
    name = { source: (id) => tok.idToToken(id) ?? `#${id}`, target: (id) => tok.idToToken(id) ?? `#${id}` };
    decode = (ids) => tok.decode(ids);
    // Hugging Face's generate() rules, greedy.
    const rules = {
      decoderStartId: start,
      eosId: eos,
      numBeams: 1,
      maxLength: g.maxLength,
      lengthPenalty: g.lengthPenalty,
      earlyStopping: g.earlyStopping,
      badWordsIds: g.badWordsIds,
      forcedEosTokenId: g.forcedEosTokenId,
      minLength: g.minLength,
    };
    translate = {
      now: () => first(generateHf(model, src, rules)),
      later: async () => first(await generateHfReading(model, src, srcIds, rules)),
    };
  }
  return {
    translate: given === null ? translate : null,
    flow: (translated, deferred) => {
      let tgtIds: number[];
      let shown: FlowText;
      if (given !== null) {
        tgtIds = [start, ...given];
        shown = { text: source, target: target!, translated: false };
      } else {
        const { tokens, finished } = translated!;
        // The decoder is fed the start id and the output but its last id (EOS when it finished).
        const out = finished ? [...tokens, eos] : tokens;
        tgtIds = [start, ...out.slice(0, -1)];
        shown = { text: source, target: decode(tokens), translated: true };
      }
      checkLength(tgtIds.length, 'the decoder input');
      const label = (id: number, axis: FlowAxis) => (axis === 'source' ? name.source(id) : name.target(id));
      const flowOptions = { dims: options.dims, top: options.top, label };
      const { run, rec } = recordSeq2seqFlow(model, srcIds, tgtIds, flowOptions, deferred);
      return { run: { ...run, text: shown }, rec };
    },
  };
}
