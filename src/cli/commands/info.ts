/** `qkv info`: what a model folder (or preset) is, and how many parameters it has. */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Command } from '@commander-js/extra-typings';
import type { Module } from '../../nn/module.ts';
import { Seq2Seq } from '../../models/seq2seq.ts';
import { T5 } from '../../models/hf/t5.ts';
import { withoutInit } from '../../nn/init.ts';
import { PRESETS } from '../../train/presets.ts';
import { dirSource } from '../../folder/node.ts';
import { folderShapeSync } from '../../folder/open.ts';
import { asUserError, folderKindOfDir, loadLmDir, loadLmShape, loadModelShape, UserError } from '../files.ts';
import { log, type FlagsOf } from '../options.ts';
import { ByteLevelBpeTokenizer } from '../../text/bytelevel.ts';

function flags() {
  return new Command('info')
    .description("print a model's configuration and parameter count")
    .option('--model <dir>', 'model folder')
    .option('--preset <name>', 'a preset instead of a folder (e.g. paper-base)');
}

export function infoCommand() {
  return flags().action((o) => info({ ...o, log }));
}

export function info(o: FlagsOf<typeof flags> & { log: (s: string) => void }): void {
  if (!o.model === !o.preset) throw new UserError('info: give exactly one of --model <dir> or --preset <name>');
  let model: Module & { config: object };
  const out: Record<string, unknown> = {};
  if (o.preset) {
    const p = PRESETS.seq2seq[o.preset];
    if (!p)
      throw new UserError(`unknown preset '${o.preset}', expected one of: ${Object.keys(PRESETS.seq2seq).join(', ')}`);
    model = new Seq2Seq({ ...p.model, vocabSize: p.vocabSize });
    out.preset = o.preset;
  } else {
    const kind = folderKindOfDir(o.model!);
    if (kind === 't5') {
      const shape = asUserError(() => folderShapeSync(dirSource(o.model!), { kinds: ['t5'] }));
      const { modelConfig, tokenizer, generation } = shape as Extract<typeof shape, { kind: 't5' }>;
      const m = withoutInit(() => new T5(modelConfig));
      const t5 = { model: o.model, kind, vocabulary: tokenizer.vocabSize, generation, config: modelConfig };
      process.stdout.write(`${JSON.stringify({ ...t5, parameters: m.numParameters() }, null, 2)}\n`);
      o.log(`${m.numParameters().toLocaleString('en-US')} parameters`);
      return;
    }
    if (kind === 'marian' || kind === 'm2m100') {
      // A Hugging Face Marian or M2M100 folder: qkv's Seq2Seq with its switches (no weights read) and HF's
      // generation defaults.
      const shape = asUserError(() => folderShapeSync(dirSource(o.model!), { kinds: [kind] }));
      const { modelConfig, tokenizer, generation } = shape as Extract<typeof shape, { kind: 'marian' | 'm2m100' }>;
      const m = new Seq2Seq(modelConfig);
      const marian = { model: o.model, kind, vocabulary: tokenizer.vocabSize, generation, config: m.config };
      process.stdout.write(`${JSON.stringify({ ...marian, parameters: m.numParameters() }, null, 2)}\n`);
      o.log(`${m.numParameters().toLocaleString('en-US')} parameters`);
      return;
    }
    const loaded =
      kind === 'hf-gpt2' ? loadLmDir(o.model!) : kind === 'gpt' ? loadLmShape(o.model!) : loadModelShape(o.model!);
    model = loaded.model;
    out.model = o.model;
    out.vocabulary = loaded.tokenizer.vocabSize;
    if ('targetTokenizer' in loaded && loaded.targetTokenizer !== loaded.tokenizer)
      out.targetVocabulary = loaded.targetTokenizer.vocabSize;
    if (loaded.config.training) out.training = loaded.config.training;
    if ('generation' in loaded && loaded.generation) {
      // A Hugging Face folder: what its files set, and the defaults the pipeline and `qkv generate` apply from them.
      const { file, set, ...defaults } = loaded.generation;
      out.generation = { file, set, defaults };
    }
    if (loaded.tokenizer instanceof ByteLevelBpeTokenizer) {
      const pp = loaded.tokenizer.postProcessor;
      const tok = loaded.tokenizer;
      out.specialTokens = {
        postProcessor: pp.kind,
        aroundPrompt: pp.process([]).ids.map((id) => tok.idToToken(id)),
      };
    }
    if ('decoding' in loaded.config && loaded.config.decoding) out.decoding = loaded.config.decoding;
    const hist = join(o.model!, 'history.json');
    if (existsSync(hist)) {
      const h = JSON.parse(readFileSync(hist, 'utf8')) as { step: number; bleu?: number; valLoss: number }[];
      const best = h.reduce((a, b) => ((b.bleu ?? -b.valLoss) > (a.bleu ?? -a.valLoss) ? b : a), h[0]);
      if (best) out.bestValidation = best;
    }
  }
  out.config = model.config;
  out.parameters = model.numParameters();
  process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
  o.log(`${model.numParameters().toLocaleString('en-US')} parameters`);
}
