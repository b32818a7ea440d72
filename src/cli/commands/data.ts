/** `qkv data encode`: its flags. The encoding is cli/data.ts's `encodeSplit` (benches and the Python tests call it too). */
import { Command } from '@commander-js/extra-typings';
import { encodeSplit, type EncodeArgs } from '../data.ts';
import { dataOption, handledBy, log, modelOption } from '../options.ts';

export function dataCommand() {
  const encode = new Command('encode')
    .description("write a split's token ids (qkv train's encoding) to a flat file for python/qkv_torch/train.py");
  const withModel = modelOption(encode, 'model or run folder whose tokenizer.json encodes the text')
    .requiredOption('--out <file>', 'file to write (safetensors: src.ids, src.offsets, tgt.ids, tgt.offsets)')
    .option('--split <name>', 'train | val | test_2016_flickr', 'train');
  const command = dataOption(withModel, 'corpus folder with SPLIT.LANG[.gz] files', (o) => [`${o.split}.${o.src}.gz`, `${o.split}.${o.tgt}.gz`])
    .option('--src <lang>', 'source language', 'en')
    .option('--tgt <lang>', 'target language', 'de')
    .action((o) => encodeSplit({ ...handledBy<EncodeArgs>()(o), log }));
  return new Command('data').description('prepare data for other trainers (python/qkv_torch/train.py)').addCommand(command);
}
