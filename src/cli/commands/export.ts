/**
 * `qkv export`, flags and handler: a model folder ready to ship — config, tokenizer and weights
 * (fp16 halves them, int8 quarters them).
 * Translation models (format 'qkv-seq2seq', from qkv train) and language models ('qkv-gpt', from
 * qkv train-lm) alike; the training state is left behind.
 */
import { join } from 'node:path';
import { Command } from '@commander-js/extra-typings';
import {
  asUserError,
  copyFolderFiles,
  DEFAULT_DECODING,
  folderKindOfDir,
  loadEnsemble,
  loadLmDir,
  removeStaleTemps,
  saveFolderWeights,
  UserError,
  writeModelConfig,
  type Decoding,
  type WeightsDType,
} from '../files.ts';
import type { Module } from '../../nn/module.ts';
import { heldDType } from '../../pipelines/options.ts';
import { exportOnnx } from '../onnx-export.ts';
import { ensembleOptions, log, modelOption, type FlagsOf, type Optional } from '../options.ts';

function flags() {
  const cmd = new Command('export').description(
    'copy a trained model (translation, or language model from train-lm) ' +
      'into a folder to ship (weights as fp16 by default), or export it to ' +
      'ONNX (--format onnx; also a Hugging Face Marian, M2M100 / NLLB, T5 or encoder folder)',
  );
  const options = modelOption(cmd, 'trained model folder (e.g. runs/NAME)')
    .requiredOption('--out <dir>', 'destination folder (e.g. models/multi30k-en-de)')
    .option('--format <name>', 'safetensors (a qkv model folder) | onnx (graphs for ONNX Runtime)', 'safetensors')
    .option(
      '--dtype <type>',
      'f16 | f32 | int8 | q4 (int8: each weight row as int8 times a scale; q4: the ' +
        "layers' weights as 4-bit values, a scale per block of 32, tables int8; onnx: " +
        'MatMulInteger / MatMulNBits graphs; default: f16 for safetensors, f32 for onnx)',
    )
    .option('--with-attention', "onnx: also output every layer's attention weights (for viewers)", false)
    .option('--force', 'onnx: replace an existing --out folder', false);
  return ensembleOptions(options, {
    ensemble:
      'more model folders (comma-separated) shipped with --model as its ' +
      'ensemble, in subfolders member-2, member-3, ... that its config.json ' +
      'names (qkv translate and eval decode with them all)',
    noEnsemble: 'ship --model alone, without the ensemble members its config.json names',
  });
}

export function exportCommand() {
  return flags().action((o) => exportModel({ ...o, log }));
}

/**
 * exportModel's options: the flags' (what commander defaults may be left out when called from
 * code); `ensemble` is more folders to ship with --model as its ensemble, or false (--no-ensemble):
 * --model alone, without the members its config.json names.
 */
export type ExportArgs = Optional<FlagsOf<typeof flags>, 'format' | 'withAttention' | 'force'> & {
  log: (s: string) => void;
};

/**
 * --dtype's values: fp16 (the default), fp32, int8 rows with their scales (tensor/quantize.ts), or q4: the model
 * quantized as module.quantize({ dtype: 'q4' }) quantizes it and written as it is held (docs/model-folder.md).
 */
const WEIGHT_DTYPES: Partial<Record<string, WeightsDType | 'q4'>> = { f16: 'F16', f32: 'F32', int8: 'I8', q4: 'q4' };

export function exportModel(o: ExportArgs): void {
  const format = o.format ?? 'safetensors';
  if (format !== 'safetensors' && format !== 'onnx')
    throw new UserError(`--format must be safetensors or onnx, got '${format}'`);
  const folderKind = folderKindOfDir(o.model);
  const kind = folderKind === 'seq2seq' ? 'seq2seq' : 'gpt';
  if (folderKind === 'hf-encoder') {
    if (o.ensemble) throw new UserError('--ensemble is for qkv translation folders, not a Hugging Face encoder folder');
    if (format === 'onnx') return exportOnnx(o, 'hf-encoder');
    throw new UserError(
      `${o.model} is a Hugging Face folder: qkv reads it as it is (--model ${o.model}); ` +
        'export it with --format onnx',
    );
  }
  if (folderKind === 'marian' || folderKind === 'm2m100' || folderKind === 't5') {
    const what = folderKind === 'marian' ? 'Marian' : folderKind === 'm2m100' ? 'M2M100 / NLLB' : 'T5';
    if (o.ensemble) throw new UserError(`--ensemble is for qkv translation folders, not a Hugging Face ${what} folder`);
    if (format === 'onnx') return exportOnnx(o, folderKind);
    throw new UserError(
      `${o.model} is a Hugging Face folder: qkv reads it as it is (--model ${o.model}); ` +
        'export it with --format onnx, or take a qkv run folder',
    );
  }
  if (o.ensemble && (format === 'onnx' || kind === 'gpt')) {
    throw new UserError(
      `--ensemble is for translation models in --format safetensors ` +
        `(${format === 'onnx' ? 'an ONNX export holds one model' : `${o.model} is a language model`}): drop --ensemble`,
    );
  }
  if (format === 'onnx') return exportOnnx(o, kind);
  if (o.withAttention) throw new UserError('--with-attention is for --format onnx');
  const dtype = WEIGHT_DTYPES[(o.dtype ?? 'f16').toLowerCase()];
  if (!dtype) throw new UserError(`--dtype must be f16, f32, int8 or q4, got '${o.dtype}'`);
  if (folderKind === 'hf-gpt2')
    throw new UserError(
      `${o.model} is a Hugging Face folder: qkv reads it as it is (--model ${o.model}); export takes a qkv run folder`,
    );
  if (kind === 'gpt') {
    const { model } = loadLmDir(o.model);
    const params = model.numParameters();
    copyModel(o.model, o.out, model, dtype);
    o.log(`wrote ${o.out} (${params.toLocaleString('en-US')} parameters, ${dtype})`);
    return;
  }
  // Loading validates the folders, the weights and that the members share --model's tokenizers.
  const { members, memberDirs, config } = loadEnsemble(o.model, o.ensemble || [], { own: o.ensemble !== false });
  const own = config.decoding?.ensemble ?? [];
  // Members keep the subfolder names --model's config.json gives them; --ensemble's are numbered after them.
  const names = o.ensemble === false ? [] : [...own];
  for (let k = names.length + 2; names.length < members.length - 1; k++)
    if (!names.includes(`member-${k}`)) names.push(`member-${k}`);
  const params = members.reduce((n, m) => n + m.numParameters(), 0);
  copyModel(o.model, o.out, members[0], dtype);
  if (names.join('\n') !== own.join('\n')) {
    // α was chosen for other models: keep the numbers, drop the claim.
    const { beam, alpha } = config.decoding ?? DEFAULT_DECODING;
    const decoding: Decoding = { beam, alpha, ...(names.length > 0 && { ensemble: names }) };
    writeModelConfig(o.out, { ...config, decoding });
    const from = config.decoding
      ? `was chosen for ${o.model}${own.length ? ' with its ensemble' : ' alone'}`
      : "is the paper's default";
    o.log(
      `α ${alpha} ${from}: choose it for ` +
        `${names.length ? 'this ensemble' : 'this model alone'} on val (qkv ` +
        `eval --model ${o.out} --split val --tune-alpha 1,1.4,1.8)`,
    );
  }
  names.forEach((name, i) => copyModel(memberDirs[i + 1], join(o.out, name), members[i + 1], dtype));
  o.log(
    `wrote ${o.out} (${params.toLocaleString('en-US')} ` +
      `parameters${members.length > 1 ? ` in ${members.length} models: ${['.', ...names].join(', ')}` : ''}, ${dtype})`,
  );
}

/**
 * A model folder's config, tokenizers and history copied to `out`, and its weights written in `dtype` (q4: the
 * model is quantized in place, then written as it is held, the rest in fp16).
 */
function copyModel(from: string, out: string, model: Module, dtype: WeightsDType | 'q4'): void {
  const held = heldDType(model);
  if (held && (dtype === 'I8' ? 'int8' : dtype) !== held)
    throw new UserError(
      `${from} holds ${held} weights, which are written as they are stored: export it with --dtype ` +
        `${held}, or export the float folder with --dtype ${dtype === 'I8' ? 'int8' : dtype.toLowerCase()}`,
    );
  removeStaleTemps(out); // a killed earlier export's
  asUserError(() => copyFolderFiles(from, out, { extra: ['history.json'] }));
  if (dtype === 'q4') asUserError(() => model.quantize({ dtype: 'q4' }));
  // An int8 folder exported again: its weights as they are held (saveWeights writes int8/q4 tensors as stored).
  saveFolderWeights(out, model, dtype === 'q4' || held ? 'F16' : dtype);
}
