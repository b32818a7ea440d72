/** Whole models built from nn: `import { models } from 'qkv'`. */
export { Seq2Seq, PAPER_BASE, MULTI30K_SMALL, type Seq2SeqConfig } from './seq2seq.ts';
