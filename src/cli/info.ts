/** `qkv info`: what a model folder (or preset) is, and how many parameters it has. */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Seq2Seq } from '../models/seq2seq.ts';
import { PRESETS } from '../train/presets.ts';
import { loadModelShape, UserError } from './files.ts';

export function info(o: { model?: string; preset?: string; log: (s: string) => void }): void {
  if (!o.model === !o.preset) throw new UserError('info: give exactly one of --model <dir> or --preset <name>');
  let model: Seq2Seq;
  const out: Record<string, unknown> = {};
  if (o.preset) {
    const p = PRESETS[o.preset];
    if (!p) throw new UserError(`unknown preset '${o.preset}', expected one of: ${Object.keys(PRESETS).join(', ')}`);
    model = new Seq2Seq({ ...p.model, vocabSize: p.vocabSize });
    out.preset = o.preset;
  } else {
    const loaded = loadModelShape(o.model!);
    model = loaded.model;
    out.model = o.model;
    out.vocabulary = loaded.tokenizer.vocabSize;
    if (loaded.config.training) out.training = loaded.config.training;
    const hist = join(o.model!, 'history.json');
    if (existsSync(hist)) {
      const h = JSON.parse(readFileSync(hist, 'utf8')) as { step: number; bleu: number; valLoss: number }[];
      const best = h.reduce((a, b) => (b.bleu > a.bleu ? b : a), h[0]);
      if (best) out.bestValidation = best;
    }
  }
  out.config = model.config;
  out.parameters = model.numParameters();
  process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
  o.log(`${model.numParameters().toLocaleString('en-US')} parameters`);
}
