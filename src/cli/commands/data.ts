/**
 * `qkv data encode`, flags and handler: a split's token ids, encoded with a model folder's
 * tokenizer exactly as `qkv train` encodes them, written as flat arrays for other trainers (python/qkv_torch/train.py
 * reads them, so the Python side needs no tokenizer library and sees qkv's ids).
 *
 * The file is safetensors (an 8-byte length, a JSON header, raw little-endian bytes) with four flat
 * int32 arrays: src.ids, src.offsets, tgt.ids, tgt.offsets; pair i's source is
 * src.ids[src.offsets[i] .. src.offsets[i+1]). Its metadata names the special ids, the vocabulary
 * size and the tokenizer's SHA-256, so a trainer can refuse ids made with another tokenizer.
 */
import { createHash } from 'node:crypto';
import { Command } from '@commander-js/extra-typings';
import { writeSafetensors } from '../../io/safetensors.ts';
import { Tensor } from '../../tensor/tensor.ts';
import { readParallel } from '../corpus.ts';
import { readFileIn } from '../../folder/node.ts';
import { FILES } from '../../folder/spec.ts';
import { atomicWrite, loadModelShape, removeStaleTempsOf } from '../files.ts';
import { dataOption, log, modelOption, type FlagsOf } from '../options.ts';
import { encodePairs } from '../../train/seq2seq-run.ts';

function encodeFlags() {
  const encode = new Command('encode').description(
    "write a split's token ids (qkv train's encoding) to a flat file for python/qkv_torch/train.py",
  );
  const withModel = modelOption(encode, 'model or run folder whose tokenizer.json encodes the text')
    .requiredOption('--out <file>', 'file to write (safetensors: src.ids, src.offsets, tgt.ids, tgt.offsets)')
    .option('--split <name>', 'train | val | test_2016_flickr', 'train');
  return dataOption(withModel, 'corpus folder with SPLIT.LANG[.gz] files', (o) => [
    `${o.split}.${o.src}.gz`,
    `${o.split}.${o.tgt}.gz`,
  ])
    .option('--src <lang>', 'source language', 'en')
    .option('--tgt <lang>', 'target language', 'de');
}

export function dataCommand() {
  const encode = encodeFlags().action((o) => encodeSplit({ ...o, log }));
  return new Command('data')
    .description('prepare data for other trainers (python/qkv_torch/train.py)')
    .addCommand(encode);
}

/** encodeSplit's options: `qkv data encode`'s flags. */
export type EncodeArgs = FlagsOf<typeof encodeFlags> & { log: (line: string) => void };

/** Flat ids and offsets (n + 1 of them, from 0) of a list of id sequences. */
function flatten(seqs: readonly (readonly number[])[]): { ids: Tensor; offsets: Tensor } {
  const offsets = new Int32Array(seqs.length + 1);
  for (let i = 0; i < seqs.length; i++) offsets[i + 1] = offsets[i] + seqs[i].length;
  const ids = new Int32Array(offsets[seqs.length]);
  seqs.forEach((s, i) => ids.set(s, offsets[i]));
  return { ids: new Tensor(ids, [ids.length], 'int32'), offsets: new Tensor(offsets, [offsets.length], 'int32') };
}

export function encodeSplit(a: EncodeArgs): void {
  const { tokenizer, targetTokenizer, model } = loadModelShape(a.model);
  const separate = targetTokenizer !== tokenizer;
  const text = readParallel(a.data, a.split, a.src, a.tgt);
  const pairs = encodePairs(tokenizer, text.src, text.tgt, model.config.maxLen, targetTokenizer);
  const src = flatten(pairs.map((p) => p.src));
  const tgt = flatten(pairs.map((p) => p.tgt));
  // loadModelShape read it
  const sha256 = (f: string) => createHash('sha256').update(readFileIn(a.model, f)!).digest('hex');
  const metadata = {
    format: 'qkv-encoded-pairs',
    version: '1',
    split: a.split,
    src: a.src,
    tgt: a.tgt,
    pairs: String(pairs.length),
    padId: String(tokenizer.padId),
    bosId: String(tokenizer.bosId),
    eosId: String(tokenizer.eosId),
    vocabSize: String(tokenizer.vocabSize),
    maxLen: String(model.config.maxLen),
    tokenizerSha256: sha256(FILES.tokenizer),
    // Separate vocabularies: the target side's size and tokenizer, which train.py checks against the model.
    ...(separate && {
      tgtVocabSize: String(targetTokenizer.vocabSize),
      targetTokenizerSha256: sha256(FILES.targetTokenizer),
    }),
  };
  removeStaleTempsOf(a.out); // a killed earlier run's
  atomicWrite(
    a.out,
    writeSafetensors(
      { 'src.ids': src.ids, 'src.offsets': src.offsets, 'tgt.ids': tgt.ids, 'tgt.offsets': tgt.offsets },
      { metadata },
    ),
  );
  a.log(
    `wrote ${a.out}: ${pairs.length} pairs, ${src.ids.size} source and ` +
      `${tgt.ids.size} target ids (${a.split}.${a.src}-${a.tgt}, ` +
      (separate
        ? `vocabularies ${tokenizer.vocabSize} and ${targetTokenizer.vocabSize}`
        : `vocabulary ${tokenizer.vocabSize}`) +
      ')',
  );
}
