/** `qkv translate` and `qkv eval`. */
import { readFileSync } from 'node:fs';
import cliProgress from 'cli-progress';
import { corpusBleu } from '../text/bleu.ts';
import { readParallel } from './corpus.ts';
import { encodeLines, translateIds } from './evaluate.ts';
import { atomicWrite, loadModelDir, UserError } from './files.ts';

interface Common {
  model: string;
  beam: number;
  alpha: number;
  log: (s: string) => void;
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

export async function translate(o: Common & { input?: string; output?: string }): Promise<void> {
  const { model, tokenizer } = loadModelDir(o.model);
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
  const out = translateIds(model, tokenizer, encodeLines(model, tokenizer, lines), { beam: o.beam, alpha: o.alpha });
  const result = out.map((l) => `${l}\n`).join('');
  if (o.output) atomicWrite(o.output, result);
  else process.stdout.write(result);
}

export function evaluate(o: Common & { split: string; data: string; src: string; tgt: string; output?: string }): void {
  const { model, tokenizer } = loadModelDir(o.model);
  const { src, tgt } = readParallel(o.data, o.split, o.src, o.tgt);
  const bar = new cliProgress.SingleBar({ format: `${o.split} |{bar}| {value}/{total} sentences | ETA {eta_formatted}`, stream: process.stderr, noTTYOutput: !process.stderr.isTTY, notTTYSchedule: 15000 }, cliProgress.Presets.shades_classic);
  bar.start(src.length, 0);
  const t0 = performance.now();
  const hyps = translateIds(model, tokenizer, encodeLines(model, tokenizer, src), { beam: o.beam, alpha: o.alpha, onProgress: (d) => bar.update(d) });
  bar.stop();
  if (o.output) atomicWrite(o.output, hyps.map((l) => `${l}\n`).join(''));
  const score = corpusBleu(hyps, tgt);
  o.log(`${src.length} sentences in ${((performance.now() - t0) / 1000).toFixed(1)} s (beam ${o.beam})`);
  process.stdout.write(`${score.toString()}\n${score.signature}\n`);
}
