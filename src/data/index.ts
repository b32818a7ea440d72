/** Data pipeline: `import { data } from 'qkv'`. */
export { planBatches, epochOrder, makeBatch, type Pair, type Batch, type SpecialIds } from './batching.ts';
