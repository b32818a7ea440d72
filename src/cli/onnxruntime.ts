/**
 * `--engine onnxruntime` for translate and generate: a folder written by `qkv export --format onnx`
 * run with onnxruntime-node. ONNX Runtime is imported only here, and only when asked for, so qkv
 * works without it (and in browsers).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { generateHfAsync, sourceIds, type HfSearchOptions } from '../decode/hf-search.ts';
import { OrtGpt, OrtSeq2Seq, OrtSeq2SeqStepper, type OrtLike, type OrtSessionLike } from '../decode/onnxruntime.ts';
import { MANIFEST, type OnnxManifest } from '../io/onnx/export.ts';
import type { BpeTokenizer } from '../text/bpe.ts';
import { outputText, sourceBatches, type TranslateOptions } from '../decode/batch.ts';
import type { T5Engine } from '../pipelines/text2text.ts';
import { Tensor } from '../tensor/tensor.ts';
import { readJson, UserError } from './files.ts';

export type Engine = 'qkv' | 'onnxruntime';

export function parseEngine(e: string | undefined): Engine {
  const s = e ?? 'qkv';
  if (s !== 'qkv' && s !== 'onnxruntime') throw new UserError(`--engine must be qkv or onnxruntime, got '${s}'`);
  return s;
}

type OrtNode = OrtLike & { InferenceSession: { create(path: string, options?: object): Promise<OrtSessionLike> } };

/** onnxruntime-node, or one clear line saying how to get it. */
export async function loadOnnxRuntime(): Promise<OrtNode> {
  try {
    const name = 'onnxruntime-node'; // not a literal import: bundlers and type-checkers need not find it
    const m = (await import(name)) as OrtNode & { default?: OrtNode };
    return m.InferenceSession ? m : m.default!;
  } catch (e) {
    throw new UserError(
      `--engine onnxruntime needs onnxruntime-node, an optional dependency: ` +
        `ONNXRUNTIME_NODE_INSTALL=skip npm install onnxruntime-node (the CPU ` +
        `binaries are in the package; skip stops its install script from ` +
        `downloading GPU ones) (${(e as Error).message.split('\n')[0]})`,
    );
  }
}

/** The manifest of an ONNX export folder, checked to be of the expected kind. */
export function readManifest(dir: string, kind: OnnxManifest['kind']): OnnxManifest {
  const path = join(dir, MANIFEST);
  if (!existsSync(path))
    throw new UserError(
      `${dir} is not an ONNX export (no ${MANIFEST}): make one with qkv export --format onnx --model ${dir} --out DIR`,
    );
  const m = readJson(path, 'ONNX manifest') as OnnxManifest;
  if (m.format !== 'qkv-onnx' || m.kind !== kind)
    throw new UserError(
      `${path}: expected a qkv-onnx export of a ${kind} model, got format ` +
        `'${String(m.format)}' kind '${String(m.kind)}'`,
    );
  return m;
}

/**
 * Session options: ONNX Runtime's worker threads spin while they wait for work by default, which
 * on a machine with other busy processes (or qkv's own threads) costs more than it saves: greedy
 * decoding of 20 tokens took 330 ms with spinning and 47 ms without, on 2 shared cores.
 */
export const SESSION_OPTIONS = {
  extra: { session: { intra_op: { allow_spinning: '0' }, inter_op: { allow_spinning: '0' } } },
};

async function session(ort: OrtNode, dir: string, file: string): Promise<OrtSessionLike> {
  try {
    return await ort.InferenceSession.create(join(dir, file), SESSION_OPTIONS);
  } catch (e) {
    throw new UserError(`${join(dir, file)}: ONNX Runtime cannot load it (${(e as Error).message.split('\n')[0]})`);
  }
}

export async function openOnnxSeq2Seq(dir: string, ort?: OrtNode): Promise<OrtSeq2Seq> {
  const m = readManifest(dir, 'seq2seq');
  ort ??= await loadOnnxRuntime();
  const [encoder, decoder, decoderWithPast] = await Promise.all(
    [m.graphs.encoder, m.graphs.decoder, m.graphs.decoderWithPast].map((f) => session(ort!, dir, f)),
  );
  return new OrtSeq2Seq(ort, { encoder, decoder, decoderWithPast }, m);
}

export async function openOnnxGpt(dir: string, ort?: OrtNode): Promise<OrtGpt> {
  const m = readManifest(dir, 'gpt');
  ort ??= await loadOnnxRuntime();
  return new OrtGpt(ort, await session(ort, dir, m.graphs.decoder), m);
}

/** translateIds (evaluate.ts) on ONNX Runtime: the same batches, the same searches. */
export async function translateIdsOnnx(
  engine: OrtSeq2Seq,
  tok: BpeTokenizer,
  srcIds: number[][],
  o: TranslateOptions,
): Promise<string[]> {
  const out = srcIds.map(() => '');
  const ids = { bosId: tok.bosId, eosId: tok.eosId };
  for (const { rows, src, done } of sourceBatches(srcIds, tok.padId, o)) {
    const res =
      o.beam > 1
        ? await engine.beamSearch(src, { ...ids, beamSize: o.beam, lengthPenalty: o.alpha })
        : await engine.greedy(src, ids);
    rows.forEach((r, b) => (out[r] = outputText(res, b, tok, o)));
    o.onProgress?.(done, srcIds.length);
  }
  return out;
}

/**
 * translateIdsHf (decode/hf-search.ts) on ONNX Runtime, for a Marian or M2M100 / NLLB export: the same batches,
 * Hugging Face's generate() rules over the exported graphs' steps.
 */
export async function translateIdsHfOnnx(
  engine: OrtSeq2Seq,
  tok: { padId: number; decode(ids: readonly number[]): string },
  srcIds: number[][],
  o: TranslateOptions,
  rules: Omit<HfSearchOptions, 'numBeams' | 'lengthPenalty' | 'signal'>,
): Promise<string[]> {
  if (o.mbr) throw new UserError('--mbr is not available for a Hugging Face folder (Marian, M2M100 / NLLB)');
  const out = srcIds.map(() => '');
  const maxLength = Math.min(o.maxLen !== undefined ? o.maxLen + 1 : rules.maxLength, engine.info.maxPositions + 1);
  for (const { rows, src, done } of sourceBatches(srcIds, tok.padId, o)) {
    const { memory, mask } = await engine.encode(src);
    const stepper = new OrtSeq2SeqStepper(engine, memory, mask, src.shape[1], false);
    const res = await generateHfAsync(stepper, src.shape[0], {
      ...rules,
      ...sourceIds(rules as HfSearchOptions, src.dataSync<Int32Array>(), src.shape, tok.padId),
      numBeams: o.beam,
      lengthPenalty: o.alpha,
      maxLength,
      padId: engine.info.padId!,
    });
    rows.forEach((r, b) => (out[r] = tok.decode(res.tokens[b])));
    o.onProgress?.(done, srcIds.length);
  }
  return out;
}

/**
 * A T5 export's generation on ONNX Runtime, for the T5 pipelines (pipelines/text2text.ts's engine): one source
 * encoded, then generate()'s rules over the exported decoder's steps, the padding id not ruled out (generate()'s
 * rule), the length capped as qkv's own decoding of the export's manifest caps it.
 */
export function t5OnnxEngine(engine: OrtSeq2Seq): T5Engine {
  return {
    async generate(src, options) {
      const ids = new Tensor(Int32Array.from(src), [1, src.length], 'int32');
      const { memory, mask } = await engine.encode(ids);
      const stepper = new OrtSeq2SeqStepper(engine, memory, mask, src.length, false);
      return generateHfAsync(stepper, 1, {
        ...options,
        maxLength: Math.min(options.maxLength, engine.info.maxPositions + 1),
      });
    },
  };
}
