/** `qkv export`: its flags. The copying is cli/export.ts's `exportModel` (tests call it directly). */
import { Command } from '@commander-js/extra-typings';
import { exportModel, type ExportArgs } from '../export.ts';
import { ensembleOptions, handledBy, log, modelOption } from '../options.ts';

export function exportCommand() {
  const cmd = new Command('export')
    .description('copy a trained model (translation, or language model from train-lm) into a folder to ship (weights as fp16 by default), or export it to ONNX (--format onnx)');
  const options = modelOption(cmd, 'trained model folder (e.g. runs/NAME)')
    .requiredOption('--out <dir>', 'destination folder (e.g. models/multi30k-en-de)')
    .option('--format <name>', 'safetensors (a qkv model folder) | onnx (graphs for ONNX Runtime)', 'safetensors')
    .option('--dtype <type>', 'f16 | f32 | int8 (int8: safetensors only, each weight row as int8 times a scale; default: f16 for safetensors, f32 for onnx)')
    .option('--with-attention', 'onnx: also output every layer\'s attention weights (for viewers)', false)
    .option('--force', 'onnx: replace an existing --out folder', false);
  return ensembleOptions(options, {
    ensemble: 'more model folders (comma-separated) shipped with --model as its ensemble, in subfolders member-2, member-3, ... that its config.json names (qkv translate and eval decode with them all)',
    noEnsemble: "ship --model alone, without the ensemble members its config.json names",
  }).action((o) => exportModel({ ...handledBy<ExportArgs>()(o), log }));
}
