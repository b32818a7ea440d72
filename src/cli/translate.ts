/** `qkv translate` and `qkv eval`. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { corpusBleu } from '../text/bleu.ts';
import { readParallel } from './corpus.ts';
import { degradedSummary, encodeLines, EXIT_DEGRADED, translateIds, type DegradedLine } from './evaluate.ts';
import { progressBar } from './progress.ts';
import { atomicWrite, DEFAULT_DECODING, loadModelDir, loadModelShape, UserError, type Decoding, type ModelConfigFile } from './files.ts';
import { openOnnxSeq2Seq, parseEngine, translateIdsOnnx } from './onnxruntime.ts';

interface Common {
  model: string;
  /** Default: the model's config.json `decoding`, else 4. */
  beam?: number;
  /** Default: the model's config.json `decoding`, else 0.6. */
  alpha?: number;
  log: (s: string) => void;
}

/** Beam and α: the flags, else the model's own decoding defaults, else the paper's. */
function decodingFor(o: Common, config: ModelConfigFile): Decoding {
  const d = config.decoding ?? DEFAULT_DECODING;
  return { beam: o.beam ?? d.beam, alpha: o.alpha ?? d.alpha };
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

export async function translate(o: Common & { input?: string; output?: string; skipLong?: boolean; engine?: string }): Promise<void> {
  // --engine onnxruntime: --model is a folder from qkv export --format onnx (its config and tokenizer, no weights).
  const onnx = parseEngine(o.engine) === 'onnxruntime' ? await openOnnxSeq2Seq(o.model) : null;
  const { model, tokenizer, config } = onnx ? loadModelShape(o.model) : loadModelDir(o.model);
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
  const { ids, degraded } = encodeLines(model, tokenizer, lines, { skipLong: o.skipLong });
  const out = onnx ? await translateIdsOnnx(onnx, tokenizer, ids, dec) : translateIds(model, tokenizer, ids, dec);
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

export function evaluate(o: Common & { split: string; data: string; src?: string; tgt?: string; direction?: { src: string; tgt: string }; output?: string; tuneAlpha?: number[]; skipLong?: boolean }): void {
  const { model, tokenizer, config } = loadModelDir(o.model);
  const lang = languages(o, config);
  if (o.tuneAlpha && o.split !== 'val') {
    throw new UserError(`--tune-alpha chooses α on the validation set: use --split val (got --split ${o.split}; choosing on a test set would overstate its score)`);
  }
  if (o.tuneAlpha && o.alpha !== undefined) throw new UserError('--tune-alpha and --alpha both given: pass one');
  const { src, tgt } = readParallel(o.data, o.split, lang.src, lang.tgt);
  const { ids: srcIds, degraded } = encodeLines(model, tokenizer, src, { skipLong: o.skipLong });
  const dec = decodingFor(o, config);
  const run = (alpha: number) => {
    const bar = progressBar(`${o.split} |{bar}| {value}/{total} sentences | ETA {eta_formatted}`);
    bar.start(src.length, 0);
    const t0 = performance.now();
    const hyps = translateIds(model, tokenizer, srcIds, { beam: dec.beam, alpha, onProgress: (d) => bar.update(d) });
    bar.stop();
    const score = corpusBleu(hyps, tgt);
    o.log(`${src.length} sentences in ${((performance.now() - t0) / 1000).toFixed(1)} s (beam ${dec.beam}, α ${alpha}): BLEU ${score.score.toFixed(2)}`);
    return { hyps, score };
  };
  let alpha = dec.alpha;
  let best = run(alpha);
  if (o.tuneAlpha) {
    const tried: string[] = [`${alpha}`];
    for (const a of o.tuneAlpha) {
      if (tried.includes(`${a}`)) continue;
      tried.push(`${a}`);
      const r = run(a);
      if (r.score.score > best.score.score) [best, alpha] = [r, a];
    }
    const decoding: Decoding = { beam: dec.beam, alpha, chosen: `${o.split} BLEU ${best.score.score.toFixed(2)} with α ${alpha} (tried ${tried.join(', ')})` };
    atomicWrite(join(o.model, 'config.json'), `${JSON.stringify({ ...config, decoding }, null, 2)}\n`);
    o.log(`wrote ${join(o.model, 'config.json')}: decoding beam ${dec.beam}, α ${alpha}`);
  }
  if (o.output) atomicWrite(o.output, best.hyps.map((l) => `${l}\n`).join(''));
  process.stdout.write(`${best.score.toString()}\n${best.score.signature}\n`);
  reportDegraded(o, degraded, src.length);
}
