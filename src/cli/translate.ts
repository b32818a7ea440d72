/** `qkv translate` and `qkv eval`. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { corpusBleu, type BleuScore } from '../text/bleu.ts';
import { corpusChrf } from '../text/chrf.ts';
import { bootstrapSummary } from './bleu.ts';
import { pairedBootstrap } from '../text/significance.ts';
import { readParallel } from './corpus.ts';
import { degradedSummary, encodeLines, EXIT_DEGRADED, translateIds, type DegradedLine, type TranslateOptions } from './evaluate.ts';
import { progressBar } from './progress.ts';
import { atomicWrite, DEFAULT_DECODING, loadEnsemble, loadModelShape, UserError, writeModelConfig, type Decoding, type LoadedEnsemble, type ModelConfigFile } from './files.ts';
import { openOnnxSeq2Seq, parseEngine, translateIdsOnnx } from './onnxruntime.ts';

interface Common {
  model: string;
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
  log: (s: string) => void;
}

/** The models to decode with: --model, its config.json's ensemble (unless --no-ensemble), and --ensemble. */
function loadModels(o: Common): LoadedEnsemble {
  return loadEnsemble(o.model, o.ensemble || [], { own: o.ensemble !== false });
}

/**
 * Beam, α and MBR: the flags, else the model's own decoding defaults, else the paper's (no MBR).
 * A folder's MBR applies to beam search only: with --beam 1 (greedy, one hypothesis) it is off;
 * an explicit --mbr with --beam 1 is an error.
 */
function decodingFor(o: Common, config: ModelConfigFile): Decoding {
  const d = config.decoding ?? DEFAULT_DECODING;
  const beam = o.beam ?? d.beam;
  if (o.mbr && beam < 2) {
    throw new UserError(`--mbr chooses among beam search's hypotheses: it needs --beam 2 or more, got --beam ${beam}`);
  }
  const mbr = beam > 1 && (o.mbr ?? d.mbr ?? false);
  return { beam, alpha: o.alpha ?? d.alpha, ...(mbr && { mbr }) };
}

/** `beam 8, α 0.6, MBR` for logs. */
function describe(dec: Decoding, alpha = dec.alpha): string {
  return `beam ${dec.beam}, α ${alpha}${dec.mbr ? ', MBR' : ''}`;
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function splitLines(text: string): string[] {
  const lines = text.split(/\r?\n/);
  if (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
  return lines;
}

/** Each degraded line on stderr, then a summary; the exit status says some lines were degraded. */
function reportDegraded(o: Common, degraded: readonly DegradedLine[], total: number): void {
  if (degraded.length === 0) return;
  for (const d of degraded) o.log(`qkv: ${d.message}`);
  o.log(`qkv: ${degradedSummary(degraded, total)}`);
  process.exitCode = EXIT_DEGRADED;
}

/** The models to decode with and how: qkv's (an ensemble, maybe) or ONNX Runtime's graphs. */
interface Engine {
  loaded: LoadedEnsemble;
  /** What encodeLines needs: the members, or the ONNX folder's model shape. */
  model: LoadedEnsemble['model'] | LoadedEnsemble['members'];
  run(ids: number[][], o: TranslateOptions): Promise<string[]>;
  /** For logs: `, an ensemble of 2 models`, `, ONNX Runtime`, or nothing. */
  label: string;
}

/**
 * --engine qkv: --model with its ensemble; --engine onnxruntime: --model is a folder from qkv export
 * --format onnx (its config and tokenizer, no weights), the folder's own model alone.
 */
async function openEngine(o: Common & { engine?: string }): Promise<Engine> {
  if (parseEngine(o.engine) === 'qkv') {
    const loaded = loadModels(o);
    const n = loaded.members.length;
    return { loaded, model: loaded.members, run: async (ids, t) => translateIds(loaded.members, loaded.targetTokenizer, ids, t), label: n > 1 ? `, an ensemble of ${n} models` : '' };
  }
  if (o.ensemble) throw new UserError('--ensemble runs on the qkv engine only: drop --engine onnxruntime or --ensemble');
  const onnx = await openOnnxSeq2Seq(o.model);
  const loaded: LoadedEnsemble = { ...loadModelShape(o.model), members: [], memberDirs: [] };
  return { loaded, model: loaded.model, run: (ids, t) => translateIdsOnnx(onnx, loaded.targetTokenizer, ids, t), label: ', ONNX Runtime' };
}

export async function translate(o: Common & { input?: string; output?: string; skipLong?: boolean; engine?: string }): Promise<void> {
  const engine = await openEngine(o);
  const { tokenizer, config } = engine.loaded;
  const dec = decodingFor(o, config);
  let text: string;
  if (o.input) {
    try {
      text = readFileSync(o.input, 'utf8');
    } catch {
      throw new UserError(`input file not found: ${o.input}`);
    }
  } else {
    text = await readStdin();
  }
  const lines = splitLines(text);
  const { ids, degraded } = encodeLines(engine.model, tokenizer, lines, { skipLong: o.skipLong });
  const out = await engine.run(ids, dec);
  const result = out.map((l) => `${l}\n`).join('');
  if (o.output) atomicWrite(o.output, result);
  else process.stdout.write(result);
  reportDegraded(o, degraded, lines.length);
}

/**
 * The languages to score: --direction, else --src/--tgt, each else the model's own training
 * direction (config.json `training.direction`, e.g. en-fr), else en-de.
 */
function languages(o: { src?: string; tgt?: string; direction?: { src: string; tgt: string } }, config: ModelConfigFile): { src: string; tgt: string } {
  if (o.direction && (o.src || o.tgt)) throw new UserError('--direction and --src/--tgt both given: pass one');
  if (o.direction) return o.direction;
  const trained = typeof config.training?.direction === 'string' ? config.training.direction.split('-') : [];
  return { src: o.src ?? trained[0] ?? 'en', tgt: o.tgt ?? trained[1] ?? 'de' };
}

export async function evaluate(o: Common & { engine?: string; split: string; data: string; src?: string; tgt?: string; direction?: { src: string; tgt: string }; output?: string; tuneAlpha?: number[]; skipLong?: boolean; lowercase?: boolean; chrf?: boolean }): Promise<void> {
  if (o.tuneAlpha && parseEngine(o.engine) === 'onnxruntime') {
    throw new UserError("--tune-alpha writes α to a qkv model folder's config.json: tune on the qkv engine, then export to ONNX (drop --engine onnxruntime)");
  }
  const engine = await openEngine(o);
  const { tokenizer, config } = engine.loaded;
  const lang = languages(o, config);
  if (o.tuneAlpha && o.split !== 'val') {
    throw new UserError(`--tune-alpha chooses α on the validation set: use --split val (got --split ${o.split}; choosing on a test set would overstate its score)`);
  }
  if (o.tuneAlpha && o.alpha !== undefined) throw new UserError('--tune-alpha and --alpha both given: pass one');
  if (o.tuneAlpha && o.ensemble) throw new UserError("--tune-alpha and --ensemble both given: α is written to --model's config.json, for that model alone; pass one");
  if (o.tuneAlpha && o.ensemble === false && config.decoding?.ensemble) {
    throw new UserError(`--tune-alpha and --no-ensemble both given: α is written to --model's config.json, for the ensemble it names (${config.decoding.ensemble.join(', ')}); pass one`);
  }
  if (o.tuneAlpha && o.lowercase) throw new UserError('--tune-alpha and --lowercase both given: α is chosen on the cased score, which the model is shipped by; pass one');
  const { src, tgt } = readParallel(o.data, o.split, lang.src, lang.tgt);
  const { ids: srcIds, degraded } = encodeLines(engine.model, tokenizer, src, { skipLong: o.skipLong });
  const dec = decodingFor(o, config);
  const run = async (alpha: number) => {
    const bar = progressBar(`${o.split} |{bar}| {value}/{total} sentences | ETA {eta_formatted}`);
    bar.start(src.length, 0);
    const t0 = performance.now();
    const hyps = await engine.run(srcIds, { beam: dec.beam, alpha, mbr: dec.mbr, onProgress: (d) => bar.update(d) });
    bar.stop();
    const score = corpusBleu(hyps, tgt, { lowercase: o.lowercase ?? false });
    o.log(`${src.length} sentences in ${((performance.now() - t0) / 1000).toFixed(1)} s (${describe(dec, alpha)}${engine.label}): BLEU ${score.score.toFixed(2)}`);
    return { hyps, score };
  };
  if (!o.tuneAlpha) {
    const r = await run(dec.alpha);
    finishEval(o, r, tgt, degraded);
    return;
  }
  const tried = [...new Set([DEFAULT_DECODING.alpha, ...o.tuneAlpha])];
  const runs: AlphaRun[] = [];
  for (const a of tried) runs.push({ alpha: a, ...(await run(a)) });
  const { chosen, why } = chooseAlpha(runs, tgt, o.log);
  const decoding: Decoding = {
    beam: dec.beam,
    alpha: chosen.alpha,
    ...(dec.mbr && { mbr: true }),
    chosen: `${o.split} BLEU ${chosen.score.score.toFixed(2)} with α ${chosen.alpha}${dec.mbr ? ' (MBR)' : ''} (tried ${tried.join(', ')}; ${why})`,
    ...(config.decoding?.ensemble && { ensemble: config.decoding.ensemble }),
  };
  writeModelConfig(o.model, { ...config, decoding });
  o.log(`wrote ${join(o.model, 'config.json')}: decoding ${describe(dec, chosen.alpha)}`);
  finishEval(o, chosen, tgt, degraded);
}

export interface AlphaRun {
  alpha: number;
  hyps: string[];
  score: BleuScore;
}

/**
 * The length penalty to keep, from runs whose first is the baseline (the paper's α): the best other
 * α replaces it only if it scores higher and beats it in a paired bootstrap on these references
 * (Koehn 2004, 1,000 resamples) at p < 0.05, Bonferroni-corrected for the number of other α tried.
 * The top of a grid by a fraction of a point is noise, and such an α did not carry over to the
 * held-out test sets.
 */
export function chooseAlpha(runs: readonly AlphaRun[], references: readonly string[], log: (s: string) => void): { chosen: AlphaRun; why: string } {
  const baseline = runs[0];
  if (runs.length === 1) return { chosen: baseline, why: 'nothing else tried' };
  const top = runs.slice(1).reduce((a, b) => (b.score.score > a.score.score ? b : a));
  const needed = +(0.05 / (runs.length - 1)).toFixed(4);
  const test = pairedBootstrap(baseline.hyps, top.hyps, references);
  const p = test.p.toFixed(4);
  log(`α ${top.alpha} against α ${baseline.alpha}: ${bootstrapSummary(test, needed)}`);
  if (top.score.score > baseline.score.score && test.p < needed) {
    return { chosen: top, why: `beats α ${baseline.alpha} (${baseline.score.score.toFixed(2)}) with p ${p} in a paired bootstrap, needed < ${needed}` };
  }
  return { chosen: baseline, why: `α ${top.alpha} scored ${top.score.score.toFixed(2)}, but p ${p} in a paired bootstrap against α ${baseline.alpha}, needed < ${needed}` };
}

/** Writes the translations (--output), BLEU with its signature, and with --chrf chrF2 with its own. */
function finishEval(o: Common & { output?: string; chrf?: boolean; lowercase?: boolean }, best: { hyps: string[]; score: BleuScore }, refs: readonly string[], degraded: DegradedLine[]): void {
  if (o.output) atomicWrite(o.output, best.hyps.map((l) => `${l}\n`).join(''));
  const out = [best.score.toString(), best.score.signature];
  if (o.chrf) {
    const c = corpusChrf(best.hyps, refs, { lowercase: o.lowercase ?? false });
    out.push(c.toString(), c.signature);
  }
  process.stdout.write(out.map((l) => `${l}\n`).join(''));
  reportDegraded(o, degraded, refs.length);
}
