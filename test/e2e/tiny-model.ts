/**
 * Tiny model folders for the explorer's tests: a BPE learned on a few sentences and a randomly
 * initialised Seq2Seq (nothing trained), written with the functions of src/cli/files.ts; and a
 * character-level GPT folder, written as `qkv train-lm` writes one.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { saveModelDir, saveWeights } from '../../src/cli/files.ts';
import { saveLmDir } from '../../src/folder/node.ts';
import { GPT } from '../../src/models/gpt.ts';
import { Seq2Seq } from '../../src/models/seq2seq.ts';
import { manualSeed } from '../../src/tensor/random.ts';
import { BpeTokenizer } from '../../src/text/bpe.ts';
import { CharTokenizer } from '../../src/text/chars.ts';

export const SENTENCES = [
  'A dog runs in the park.',
  'Two men are playing soccer.',
  'A little girl climbs a tree.',
  'Ein Hund rennt im Park.',
  'Zwei Männer spielen Fußball.',
  'Ein kleines Mädchen klettert auf einen Baum.',
];

const made: string[] = [];
process.once('exit', () => {
  for (const d of made) rmSync(d, { recursive: true, force: true });
});

/** A fresh temporary folder, removed when the process exits. */
export function tempDir(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  made.push(d);
  return d;
}

export const LAYERS = 2;
export const HEADS = 2;

/** A tiny translation folder; `dModel` 32 (feed-forward 64) makes every layer's input q4-able (a multiple of 32). */
export function makeTinyModel(seed = 1, dModel = 16): { dir: string; model: Seq2Seq; tokenizer: BpeTokenizer } {
  const dir = tempDir('qkv-tiny-');
  const tokenizer = BpeTokenizer.learn(SENTENCES, { vocabSize: 120, minFrequency: 1 });
  manualSeed(seed);
  const model = new Seq2Seq({
    vocabSize: tokenizer.vocabSize,
    dModel,
    nhead: HEADS,
    numEncoderLayers: LAYERS,
    numDecoderLayers: LAYERS,
    dimFeedforward: 2 * dModel,
    dropout: 0,
    activation: 'relu',
    normFirst: false,
    maxLen: 24,
    padId: tokenizer.padId,
  });
  model.eval();
  saveModelDir(dir, model, tokenizer, { preset: 'test-tiny' });
  saveWeights(join(dir, 'model.safetensors'), model.stateDict());
  return { dir, model, tokenizer };
}

/** The same with separate vocabularies: English BPE for the source, German for the target (target_tokenizer.json). */
export function makeTinySeparateModel(seed = 1): {
  dir: string;
  model: Seq2Seq;
  tokenizer: BpeTokenizer;
  targetTokenizer: BpeTokenizer;
} {
  const dir = tempDir('qkv-tiny-sep-');
  const tokenizer = BpeTokenizer.learn(SENTENCES.slice(0, 3), { vocabSize: 90, minFrequency: 1 });
  const targetTokenizer = BpeTokenizer.learn(SENTENCES.slice(3), { vocabSize: 100, minFrequency: 1 });
  manualSeed(seed);
  const model = new Seq2Seq({
    vocabSize: tokenizer.vocabSize,
    tgtVocabSize: targetTokenizer.vocabSize,
    dModel: 16,
    nhead: HEADS,
    numEncoderLayers: LAYERS,
    numDecoderLayers: LAYERS,
    dimFeedforward: 32,
    dropout: 0,
    activation: 'relu',
    normFirst: false,
    maxLen: 24,
    padId: tokenizer.padId,
  });
  model.eval();
  saveModelDir(dir, model, tokenizer, { preset: 'test-tiny' }, targetTokenizer);
  saveWeights(join(dir, 'model.safetensors'), model.stateDict());
  return { dir, model, tokenizer, targetTokenizer };
}

export const GPT_LAYERS = 2;
export const GPT_HEADS = 2;

/** A tiny language-model folder (as `qkv train-lm` writes one): characters of SENTENCES, a random GPT. */
export function makeTinyGpt(seed = 1): { dir: string; model: GPT; tokenizer: CharTokenizer } {
  const dir = tempDir('qkv-tiny-gpt-');
  const tokenizer = CharTokenizer.learn(SENTENCES);
  manualSeed(seed);
  const model = new GPT({
    vocabSize: tokenizer.vocabSize,
    blockSize: 48,
    nLayer: GPT_LAYERS,
    nHead: GPT_HEADS,
    nEmbd: 16,
    dropout: 0,
    positions: 'learned',
  });
  model.eval();
  saveLmDir(dir, model, tokenizer, 'char', { preset: 'test-tiny' });
  saveWeights(join(dir, 'model.safetensors'), model.stateDict());
  return { dir, model, tokenizer };
}
