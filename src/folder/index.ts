/**
 * Model folders (docs/model-folder.md): what they hold, which kind a folder is, and the one door
 * that opens every kind from every source (contents, a URL, picked files; a Node directory through
 * `folder/node.ts`'s `dirSource`). Browser-safe; reading paths and writing folders is
 * `folder/node.ts` (Node only).
 */
export * from './spec.ts';
export * from './seq2seq.ts';
export * from './gpt.ts';
export * from './source.ts';
export * from './open.ts';
export * from './marian.ts';
