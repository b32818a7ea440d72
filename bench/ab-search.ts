/**
 * A/B timing of a decoding search of the shipped EN→DE model's first member (issue 51, point 2), beside
 * bench/ab-decode.ts (the pipeline, EN→FR): the steppers as greedy() and beamSearch() make them, driven by
 * the search code directly, so a run is the encoder and the steps, no tokenizer and no pipeline.
 *   npx tsx bench/ab-search.ts                          greedy, first val sentence, exactly 20 tokens
 *   BEAM=4 LINES=32 REPS=2 npx tsx bench/ab-search.ts   beam 4 (α 0.6) over the first 32 val sentences
 *   OUTER=1 ...                                         each run inside a memoryScope (as bench/onnx.ts)
 *   PROF=file.cpuprofile ...                            a V8 CPU profile (100 µs) of the timed runs
 * One JSON line: wall and CPU (process, all threads) ms per run, the mean over REPS runs (default 200)
 * after 20 warm-up runs. Copy it into the other checkout's bench/ and run the two alternately, a fresh
 * process each time; on a shared machine compare the CPU times.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { gunzipSync } from 'node:zlib';
import { noGrad } from '../src/autograd/grad-mode.ts';
import { encodeLines, sourceBatches } from '../src/decode/batch.ts';
import * as search from '../src/decode/search.ts';
import type { Seq2Seq } from '../src/models/seq2seq.ts';
import { withEvalMode } from '../src/nn/module.ts';
import { openTranslation } from '../src/pipelines/load.ts';
import type { BpeTokenizer } from '../src/text/bpe.ts';
import { memoryScope } from '../src/index.ts';

const { beamSearchSteps, greedySearch, prepareSearch } = search;
/** As greedy() and beamSearch() make them where this checkout has that (owning caches, freed after). */
const encodeSources = search.encodeSources as (...a: unknown[]) => ReturnType<typeof search.encodeSources>;
const releaseStepper = (s: unknown) => (search as { releaseStepper?: (s: unknown) => void }).releaseStepper?.(s);

const beam = Number(process.env.BEAM ?? 1);
const reps = Number(process.env.REPS ?? 200);
const nLines = Number(process.env.LINES ?? 1);
const outer = process.env.OUTER === '1';
const opened = await openTranslation('models/multi30k-en-de', false);
const model = opened.model as Seq2Seq;
const tok = opened.tokenizer as BpeTokenizer;
const lines = gunzipSync(readFileSync(new URL('../../shared/data/multi30k/val.en.gz', import.meta.url)))
  .toString('utf8')
  .split('\n')
  .slice(0, nLines);
const { ids: srcIds } = encodeLines(model, tok, lines, {});
const [batch] = [...sourceBatches(srcIds, tok.padId, { beam, alpha: 0.6, batchSize: nLines })];
const src = batch!.src;
const ids = { bosId: tok.bosId, eosId: tok.eosId };

function decode(): void {
  const { members, maxLens, padId } = prepareSearch(model, src, ids);
  withEvalMode(members, () =>
    noGrad(() => {
      const stepper = encodeSources(members, src, ids, true);
      if (beam > 1) beamSearchSteps(stepper, maxLens, { ...ids, padId, beamSize: beam, lengthPenalty: 0.6 });
      else
        greedySearch(
          stepper,
          maxLens.map(() => 20),
          { ...ids, padId, minLen: 20 },
        );
      releaseStepper(stepper);
    }),
  );
}
const once = () => (outer ? memoryScope(decode) : decode());

for (let i = 0; i < 20; i++) once();
const session = process.env.PROF ? new Session() : null;
if (session) {
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 100 });
  await session.post('Profiler.start');
}
const u0 = process.cpuUsage();
const t0 = performance.now();
for (let i = 0; i < reps; i++) once();
const wall = performance.now() - t0;
const u = process.cpuUsage(u0);
if (session) {
  const { profile } = await session.post('Profiler.stop');
  writeFileSync(process.env.PROF!, JSON.stringify(profile));
}
console.log(JSON.stringify({ wallMsPerRun: wall / reps, cpuMsPerRun: (u.user + u.system) / 1000 / reps }));
process.exit(0);
