/**
 * What `qkv translate` and `qkv eval` share: the models to decode with (qkv's, maybe an ensemble, or
 * ONNX Runtime's graphs), the translation pipeline over them (the object library users call, so the
 * CLI and the library decode by one path), the flags mapped onto its options in one place, and the
 * report of degraded lines.
 */
import {
  degradedSummary,
  EXIT_DEGRADED,
  translateIdsAsync,
  type DegradedLine,
  type TranslateOptions,
} from '../decode/batch.ts';
import type { PipelineWarning } from '../pipelines/options.ts';
import {
  marianRules,
  translationPipeline,
  type DecodingNames,
  type TranslationOptions,
  type TranslationEngine,
  type TranslationPipeline,
} from '../pipelines/translation.ts';
import { MARIAN_FILES, type LoadedMarian } from '../folder/marian.ts';
import { readJsonIn, readM2M100Dir, readM2M100Shape, readMarianDir, readMarianShape } from '../folder/node.ts';
import type { LoadedM2M100 } from '../folder/m2m100.ts';
import { translateIdsHf } from '../decode/hf-search.ts';
import { MANIFEST } from '../io/onnx/export.ts';
import { Seq2Seq } from '../models/seq2seq.ts';
import { withoutInit } from '../nn/init.ts';
import type { ModelConfigFile } from '../folder/spec.ts';
import {
  asUserError,
  folderKindOfDir,
  loadEnsemble,
  loadModelShape,
  UserError,
  type Decoding,
  type LoadedEnsemble,
  mergeAdapter,
} from './files.ts';
import { openOnnxSeq2Seq, parseEngine, translateIdsHfOnnx, translateIdsOnnx } from './onnxruntime.ts';
import { readForCurrentDevice } from '../pipelines/load.ts';
import { pipelineDType } from './options.ts';
import { applyDType } from '../pipelines/options.ts';
import type { Module } from '../nn/module.ts';

/** --dtype with --engine onnxruntime: the graphs' precision is chosen when they are exported. */
export function noOnnxDType(): UserError {
  return new UserError(
    '--dtype is for the qkv engine: an ONNX folder computes as exported (qkv export --format onnx --dtype int8|q4)',
  );
}

export interface Common {
  model: string;
  /** A PEFT LoRA adapter folder merged into a Hugging Face --model (--adapter). */
  adapter?: string;
  /**
   * More model folders decoded with `model` as an ensemble (averaged next-token probabilities), after
   * the members its config.json names; false (--no-ensemble): `model` alone, without those members.
   */
  ensemble?: string[] | false;
  /** Default: the model's config.json `decoding`, else 4. */
  beam?: number;
  /** Default: the model's config.json `decoding`, else 0.6. */
  alpha?: number;
  /** MBR among the beam pool (--mbr / --no-mbr). Default: the model's config.json `decoding`, else off. */
  mbr?: boolean;
  /** Leave over-long lines untranslated instead of truncating them (--skip-long). */
  skipLong?: boolean;
  /** --dtype: fp32, q8 (int8) or q4 compute (the pipelines' `dtype`); default: as the folders store it. */
  dtype?: string;
  /** --src-lang / --tgt-lang: a multilingual folder's (NLLB / M2M100) languages. */
  srcLang?: string;
  tgtLang?: string;
  /** --compiled (translate): the static decoder cache, its steps replayed, instead of the dynamic one op by op. */
  compiled?: boolean;
  log: (s: string) => void;
}

/** The pipeline options the flags ask for: the one place where translate's and eval's flags become them. */
export function translationOptions(o: Common): TranslationOptions {
  return {
    beam: o.beam,
    alpha: o.alpha,
    mbr: o.mbr,
    skipLong: o.skipLong,
    ...(o.compiled === true && { compiled: true }),
    ...(o.srcLang !== undefined && { srcLang: o.srcLang }),
    ...(o.tgtLang !== undefined && { tgtLang: o.tgtLang }),
  };
}

/**
 * The models to decode with: --model, its config.json's ensemble (unless --no-ensemble), and --ensemble, in the
 * dtype --dtype asks for (the pipeline option it maps onto: quantized at load, or run as stored).
 */
function loadModels(o: Common): LoadedEnsemble {
  const loaded = loadEnsemble(o.model, o.ensemble || [], { own: o.ensemble !== false });
  withDType(o, loaded.members);
  return loaded;
}

/** --dtype applied to the models as `pipeline(task, folder, { dtype })` applies it, errors naming the flag. */
export function withDType(o: { dtype?: string; model: string }, models: readonly Module[]): void {
  asUserError(() => applyDType(models, pipelineDType(o.dtype), `--dtype with --model ${o.model}`));
}

/**
 * How the pipeline's decodingFor names the flags in its errors (beam, α and MBR: the flags, else
 * the model's own decoding defaults, else the paper's; an explicit --mbr with --beam 1 is an error).
 */
const FLAG_NAMES: DecodingNames = {
  beam: '--beam',
  alpha: '--alpha',
  mbr: '--mbr',
  srcLang: '--src-lang',
  tgtLang: '--tgt-lang',
  prefix: '',
  error: (m) => new UserError(m),
};

/** `beam 8, α 0.6, MBR` for logs. */
export function describe(dec: Decoding, alpha = dec.alpha): string {
  return `beam ${dec.beam}, α ${alpha}${dec.mbr ? ', MBR' : ''}`;
}

/** A translation pipeline's warning as a degraded line (it warns of empty, truncated and skipped lines only). */
export function asDegraded(w: PipelineWarning): DegradedLine {
  return { line: w.line ?? 0, kind: w.kind as DegradedLine['kind'], message: w.message };
}

/** An onWarning that keeps each warning, as a degraded line, in `into` (reported after the output). */
export function collect(into: DegradedLine[]): (w: PipelineWarning) => void {
  return (w) => into.push(asDegraded(w));
}

/** Each degraded line on stderr, then a summary; the exit status says some lines were degraded. */
export function reportDegraded(o: Common, degraded: readonly DegradedLine[], total: number): void {
  if (degraded.length === 0) return;
  for (const d of degraded) o.log(`qkv: ${d.message}`);
  o.log(`qkv: ${degradedSummary(degraded, total)}`);
  process.exitCode = EXIT_DEGRADED;
}

/**
 * The translation pipeline over an engine: what translate and eval call, as library users call
 * `pipeline('translation', dir)`, with errors naming the flags.
 */
export function enginePipeline(engine: Engine): TranslationPipeline {
  if (engine.m2m100) {
    const onnx = engine.runHf && { model: engine.model, run: engine.run, runHf: engine.runHf, names: FLAG_NAMES };
    return translationPipeline({ kind: 'm2m100', ...engine.m2m100 }, onnx || undefined, FLAG_NAMES);
  }
  if (engine.marian)
    return translationPipeline(
      { kind: 'marian', ...engine.marian },
      { model: engine.model, run: engine.run, names: FLAG_NAMES },
    );
  return translationPipeline(
    { kind: 'seq2seq', ...engine.loaded! },
    { model: engine.model, run: engine.run, names: FLAG_NAMES },
  );
}

/** The models to decode with and how: qkv's (an ensemble, maybe) or ONNX Runtime's graphs. */
export interface Engine {
  /** A qkv folder as loaded (null for a Marian folder). */
  loaded: LoadedEnsemble | null;
  /** A Hugging Face Marian folder as loaded, decoded by HF's rules (the pipeline's own path). */
  marian?: LoadedMarian;
  /**
   * A Hugging Face M2M100 / NLLB folder as loaded (--src-lang/--tgt-lang choose the languages); with --engine
   * onnxruntime, its export's shape (no weights), decoded by runHf.
   */
  m2m100?: LoadedM2M100;
  /**
   * The folder's config.json in qkv's form, what eval reads the language pair and decoding defaults
   * from (a Marian folder's: its model config, with tokenizer_config.json's source_lang-target_lang).
   */
  config: ModelConfigFile;
  /** What encodeLines needs: the members, or the ONNX folder's model shape. */
  model: LoadedEnsemble['model'] | LoadedEnsemble['members'];
  run(ids: number[][], o: TranslateOptions): Promise<string[]>;
  /** An M2M100 export on ONNX Runtime: Hugging Face's rules, given per call by the pipeline (its languages). */
  runHf?: TranslationEngine['runHf'];
  /** For logs: `, an ensemble of 2 models`, `, ONNX Runtime`, or nothing. */
  label: string;
}

/**
 * --engine qkv: --model with its ensemble; --engine onnxruntime: --model is a folder from qkv export
 * --format onnx (its config and tokenizer, no weights), the folder's own model alone.
 */
export async function openEngine(o: Common & { engine?: string }): Promise<Engine> {
  const kind = folderKindOfDir(o.model);
  if (kind === 'm2m100') return openM2M100Engine(o);
  if (o.srcLang !== undefined || o.tgtLang !== undefined)
    throw new UserError(
      '--src-lang and --tgt-lang choose the languages of a multilingual folder (NLLB / M2M100); ' +
        `${o.model} translates one language pair`,
    );
  if (kind === 'marian') return openMarianEngine(o);
  if (o.adapter !== undefined)
    throw new UserError(
      "--adapter takes a Hugging Face folder's adapter (Marian); --model is a qkv translation folder",
    );
  if (parseEngine(o.engine) === 'qkv') {
    const loaded = loadModels(o);
    const n = loaded.members.length;
    return {
      loaded,
      config: loaded.config,
      model: loaded.members,
      run: (ids, t) => translateIdsAsync(loaded.members, loaded.targetTokenizer, ids, t),
      label: n > 1 ? `, an ensemble of ${n} models` : '',
    };
  }
  if (o.ensemble)
    throw new UserError('--ensemble runs on the qkv engine only: drop --engine onnxruntime or --ensemble');
  if (o.dtype) throw noOnnxDType();
  const onnx = await openOnnxSeq2Seq(o.model);
  const loaded: LoadedEnsemble = { ...loadModelShape(o.model), members: [], memberDirs: [] };
  return {
    loaded,
    config: loaded.config,
    model: loaded.model,
    run: (ids, t) => translateIdsOnnx(onnx, loaded.targetTokenizer, ids, t),
    label: ', ONNX Runtime',
  };
}

/**
 * A Hugging Face M2M100 / NLLB folder (--engine qkv), or its `qkv export --format onnx` folder (--engine onnxruntime,
 * the same config.json and tokenizer files beside the graphs): decoded by HF's generate() rules either way, the
 * pipeline forcing the target language per call.
 */
async function openM2M100Engine(o: Common & { engine?: string }): Promise<Engine> {
  if (o.ensemble) throw new UserError('--ensemble takes qkv translation folders, not a Hugging Face M2M100 folder');
  const onnx = parseEngine(o.engine) === 'onnxruntime';
  if (onnx && o.dtype) throw noOnnxDType();
  if (onnx && o.adapter) throw new UserError('--adapter is not available for an M2M100 / NLLB folder');
  let m: LoadedM2M100;
  let runHf: Engine['runHf'];
  if (onnx) {
    const { modelConfig, ...shape } = asUserError(() => readM2M100Shape(o.model));
    const engine = await openOnnxSeq2Seq(o.model);
    // What encodeLines reads the source length limit from: a model of the same shape (no weights).
    m = { ...shape, model: withoutInit(() => new Seq2Seq(modelConfig)), weightsFile: MANIFEST };
    const target = { padId: shape.tokenizer.padId, decode: (x: readonly number[]) => shape.tokenizer.decode(x) };
    runHf = (ids, t, rules) => translateIdsHfOnnx(engine, target, ids, t, rules);
  } else {
    m = asUserError(() =>
      readForCurrentDevice(() => {
        const read = readM2M100Dir(o.model);
        withDType(o, [read.model]);
        return read;
      }),
    );
  }
  const src = o.srcLang ?? m.tokenizer.srcLang;
  const tgt = o.tgtLang ?? m.tokenizer.tgtLang;
  return {
    loaded: null,
    m2m100: m,
    config: {
      format: 'qkv-seq2seq',
      version: 1,
      model: m.model.config,
      training: tgt !== null ? { direction: `${src}-${tgt}` } : {},
    },
    model: m.model,
    run: () => Promise.reject(new Error('internal: the M2M100 pipeline decides the run')),
    ...(runHf && { runHf }),
    label: onnx ? ', ONNX Runtime, Hugging Face generation rules' : ', Hugging Face generation rules',
  };
}

/**
 * A Hugging Face Marian folder (--engine qkv), or its `qkv export --format onnx` folder (--engine
 * onnxruntime, the same config.json and tokenizer files beside the graphs): decoded by HF's generate()
 * rules either way, the folder's own model alone.
 */
async function openMarianEngine(o: Common & { engine?: string }): Promise<Engine> {
  if (o.ensemble) throw new UserError('--ensemble takes qkv translation folders, not a Hugging Face Marian folder');
  const tc = (readJsonIn(o.model, MARIAN_FILES.tokenizerConfig) ?? {}) as {
    source_lang?: unknown;
    target_lang?: unknown;
  };
  const direction =
    typeof tc.source_lang === 'string' && typeof tc.target_lang === 'string'
      ? { direction: `${tc.source_lang}-${tc.target_lang}` }
      : {};
  const onnx = parseEngine(o.engine) === 'onnxruntime';
  if (onnx && o.dtype) throw noOnnxDType();
  if (onnx && o.adapter) throw new UserError('--adapter runs on the qkv engine only: merge it first (qkv merge)');
  let marian: LoadedMarian;
  let run: Engine['run'];
  if (onnx) {
    const { modelConfig, ...shape } = asUserError(() => readMarianShape(o.model));
    const engine = await openOnnxSeq2Seq(o.model);
    // What encodeLines reads the source length limit from: a model of the same shape (no weights).
    marian = { ...shape, model: withoutInit(() => new Seq2Seq(modelConfig)), weightsFile: MANIFEST };
    const target = { padId: shape.tokenizer.padId, decode: (x: readonly number[]) => shape.tokenizer.decode(x) };
    run = (ids, t) => translateIdsHfOnnx(engine, target, ids, t, marianRules(shape));
  } else {
    marian = asUserError(() =>
      readForCurrentDevice(() => {
        const read = readMarianDir(o.model);
        if (o.adapter !== undefined) mergeAdapter({ kind: 'marian', ...read }, o.adapter);
        withDType(o, [read.model]);
        return read;
      }),
    );
    const m = marian;
    const target = { padId: m.tokenizer.padId, decode: (x: readonly number[]) => m.tokenizer.decode(x) };
    run = (ids, t) => translateIdsHf(m.model, target, ids, t, marianRules(m));
  }
  return {
    loaded: null,
    marian,
    config: { format: 'qkv-seq2seq', version: 1, model: marian.model.config, training: direction },
    model: marian.model,
    run,
    label: onnx ? ', ONNX Runtime, Hugging Face generation rules' : ', Hugging Face generation rules',
  };
}
