/**
 * The files of an ONNX export of a qkv model, in memory: the graphs and `onnx.json`, a manifest
 * that tells a runtime which graph is which and the shapes of the key/value cache. The caller adds
 * config.json and tokenizer.json (see `qkv export --format onnx`).
 */
import type { EncoderConfig } from '../../models/encoder.ts';
import type { GPTConfig } from '../../models/gpt.ts';
import type { Seq2SeqConfig } from '../../models/seq2seq.ts';
import type { Tensor } from '../../tensor/tensor.ts';
import { OPSET, type WeightDType } from './builder.ts';
import { encoderModelGraph } from './encoder.ts';
import { gptDecoderGraph } from './gpt.ts';
import { seq2seqDecoderGraph, seq2seqEncoderGraph } from './seq2seq.ts';
import { t5DecoderGraph, t5EncoderGraph } from './t5.ts';
import type { T5Config } from '../../models/hf/t5.ts';

/** `onnx.json`: which graph is which, and the shapes a runtime needs for the key/value cache. */
export interface OnnxManifest {
  /** Always 'qkv-onnx'. */
  format: 'qkv-onnx';
  /** The manifest's version, 1. */
  version: 1;
  /** A translation model (encoder, decoder, decoder with past), a GPT (one decoder), or an encoder (BERT family). */
  kind: 'seq2seq' | 'gpt' | 'encoder';
  /** The opset every graph declares. */
  opset: number;
  /** How the weights are stored; every graph computes in fp32. */
  dtype: WeightDType;
  /** Whether the graphs also output every layer's attention weights. */
  withAttention: boolean;
  /** File names: seq2seq {encoder, decoder, decoderWithPast}; gpt {decoder}; encoder {model}. */
  graphs: Record<string, string>;
  /** Decoder layers: one present/past key and value pair each (an encoder: its layers). */
  numLayers: number;
  /** Attention heads h. */
  numHeads: number;
  /** GPT with grouped-query attention: the KV heads hk < h that past/present keys and values hold. */
  numKeyValueHeads?: number;
  /** dK, each head's width. */
  headDim: number;
  /** The logits' width: the (target) vocabulary the decoder writes (an encoder: its word table's rows). */
  vocabSize: number;
  /** Longest sequence the position table covers (Seq2Seq maxLen, GPT blockSize). */
  maxPositions: number;
  /** Seq2Seq and encoder: the padding id (never generated; masked as a key). */
  padId?: number;
  /** Seq2Seq only: encoder layers. */
  numEncoderLayers?: number;
}

/** The manifest's file name in an export folder. */
export const MANIFEST = 'onnx.json';

/** An export in memory: the manifest and the graphs' bytes. */
export interface OnnxExport {
  /** What `onnx.json` holds. */
  manifest: OnnxManifest;
  /** File name → bytes (the graphs). */
  files: Record<string, Uint8Array>;
}

/** The file names of an encoder-decoder export's three graphs (qkv's own, Marian, M2M100/NLLB and T5 alike). */
const SEQ2SEQ_GRAPHS = {
  encoder: 'encoder_model.onnx',
  decoder: 'decoder_model.onnx',
  decoderWithPast: 'decoder_with_past_model.onnx',
} as const;

/** The three graphs of a translation model and their manifest. */
export function exportSeq2SeqOnnx(
  config: Seq2SeqConfig,
  weights: Record<string, Tensor>,
  o: { dtype: WeightDType; withAttention: boolean },
): OnnxExport {
  const graphs = { ...SEQ2SEQ_GRAPHS };
  return {
    manifest: {
      format: 'qkv-onnx',
      version: 1,
      kind: 'seq2seq',
      opset: OPSET,
      dtype: o.dtype,
      withAttention: o.withAttention,
      graphs,
      numLayers: config.numDecoderLayers,
      numEncoderLayers: config.numEncoderLayers,
      numHeads: config.nhead,
      headDim: config.dModel / config.nhead,
      vocabSize: config.tgtVocabSize ?? config.vocabSize,
      maxPositions: config.maxLen,
      padId: config.padId,
    },
    files: {
      [graphs.encoder]: seq2seqEncoderGraph(config, weights, o),
      [graphs.decoder]: seq2seqDecoderGraph(config, weights, false, o),
      [graphs.decoderWithPast]: seq2seqDecoderGraph(config, weights, true, o),
    },
  };
}

/**
 * The longest output a T5 export's runtime decodes (onnx.json maxPositions): T5 has no position table (its positions
 * are relative), so this is the n_positions of T5's own configs, a bound for the runtimes, not the model's.
 */
export const T5_MAX_POSITIONS = 512;

/** The three graphs of a Hugging Face T5 / Flan-T5 (io/onnx/t5.ts: seq2seq's names and layout) and their manifest. */
export function exportT5Onnx(
  config: T5Config,
  weights: Record<string, Tensor>,
  o: { dtype: WeightDType; withAttention: boolean },
): OnnxExport {
  const graphs = { ...SEQ2SEQ_GRAPHS };
  return {
    manifest: {
      format: 'qkv-onnx',
      version: 1,
      kind: 'seq2seq',
      opset: OPSET,
      dtype: o.dtype,
      withAttention: o.withAttention,
      graphs,
      numLayers: config.numDecoderLayers,
      numEncoderLayers: config.numLayers,
      numHeads: config.numHeads,
      headDim: config.dKv,
      vocabSize: config.vocabSize,
      maxPositions: T5_MAX_POSITIONS,
      padId: config.padId,
    },
    files: {
      [graphs.encoder]: t5EncoderGraph(config, weights, o),
      [graphs.decoder]: t5DecoderGraph(config, weights, false, o),
      [graphs.decoderWithPast]: t5DecoderGraph(config, weights, true, o),
    },
  };
}

/** The graph of a GPT and its manifest. */
export function exportGptOnnx(
  config: GPTConfig,
  weights: Record<string, Tensor>,
  o: { dtype: WeightDType; withAttention: boolean },
): OnnxExport {
  const graphs = { decoder: 'decoder_model.onnx' };
  return {
    manifest: {
      format: 'qkv-onnx',
      version: 1,
      kind: 'gpt',
      opset: OPSET,
      dtype: o.dtype,
      withAttention: o.withAttention,
      graphs,
      numLayers: config.nLayer,
      numHeads: config.nHead,
      ...(config.nKVHead !== undefined && config.nKVHead !== config.nHead && { numKeyValueHeads: config.nKVHead }),
      headDim: config.headDim ?? config.nEmbd / config.nHead,
      vocabSize: config.vocabSize,
      maxPositions: config.blockSize,
    },
    files: { [graphs.decoder]: gptDecoderGraph(config, weights, o) },
  };
}

/** The graph of an Encoder (BERT, RoBERTa, XLM-R, DistilBERT; its head as built) and its manifest. */
export function exportEncoderOnnx(
  config: EncoderConfig,
  weights: Record<string, Tensor>,
  o: { dtype: WeightDType; withAttention: boolean },
): OnnxExport {
  const graphs = { model: 'model.onnx' };
  return {
    manifest: {
      format: 'qkv-onnx',
      version: 1,
      kind: 'encoder',
      opset: OPSET,
      dtype: o.dtype,
      withAttention: o.withAttention,
      graphs,
      numLayers: config.numLayers,
      numHeads: config.nhead,
      headDim: config.dModel / config.nhead,
      vocabSize: config.vocabSize,
      maxPositions: config.maxPositions,
      padId: config.padId,
    },
    files: { [graphs.model]: encoderModelGraph(config, weights, o) },
  };
}
