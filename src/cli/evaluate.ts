/** Batch translation lives in decode/batch.ts (the translation pipeline shares it); this keeps the CLI's imports. */
export * from '../decode/batch.ts';
