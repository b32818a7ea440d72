/** Types of decode.js (plain JavaScript, so it runs in a page without a build step). */
export interface ExportModel {
  manifest: {
    kind: 'seq2seq' | 'gpt';
    numLayers: number;
    numHeads: number;
    headDim: number;
    vocabSize: number;
    padId?: number;
    graphs: Record<string, string>;
  };
  sessions: Record<
    string,
    { run(feeds: Record<string, unknown>): Promise<Record<string, { data: unknown; dims: readonly number[] }>> }
  >;
}
export function openExport(ort: unknown, base: string, options?: object): Promise<ExportModel>;
export function greedyGpt(
  ort: unknown,
  model: ExportModel,
  prompt: number[],
  steps: number,
  stopId?: number,
): Promise<number[]>;
export function greedySeq2Seq(
  ort: unknown,
  model: ExportModel,
  src: number[],
  o: { bosId: number; eosId: number; maxLen?: number },
): Promise<number[]>;
