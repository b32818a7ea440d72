/**
 * Model folders (docs/model-folder.md): what they hold, which kind a folder is, and opening one
 * from its files' contents, a URL or picked files. Browser-safe; reading paths and writing
 * folders is `folder/node.ts` (Node only).
 */
export * from './spec.ts';
export * from './seq2seq.ts';
export * from './gpt.ts';
export * from './open.ts';
export * from './marian.ts';
