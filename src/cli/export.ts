/** Kept for cli/explore.ts's import alone (its rework is under way elsewhere): delete when it imports modelDirKind from ./files.ts. */
export { modelDirKind } from './files.ts';
