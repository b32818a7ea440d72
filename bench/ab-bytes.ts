/**
 * Byte-identity check of two checkouts (issue 51: "behaviour byte-identical"), beside bench/ab-decode.ts and
 * bench/ab-step.ts: hashes of every decoding step's log-probabilities and of the ids chosen, for greedy and
 * beam-4 decoding of val lines by the shipped EN→DE model (its ensemble and its first member alone), and the
 * losses and final parameters of a few training steps of the shipped recipe. Copy it into the other
 * checkout's bench/ and compare the two lines:
 *   QKV_BACKEND=wasm npx tsx bench/ab-bytes.ts [--lines N] [--steps N]    one JSON line
 * (N lines, default 64, in batches of 32 as the CLI batches them; training: N steps, default 3, of 32
 * sentences × 16 tokens in a memoryScope.)
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { noGrad } from '../src/autograd/grad-mode.ts';
import { getBackend } from '../src/backend/backend.ts';
import { encodeLines, sourceBatches } from '../src/decode/batch.ts';
import * as search from '../src/decode/search.ts';

const { beamSearchSteps, greedySearch, prepareSearch } = search;
/**
 * The steppers as greedy() and beamSearch() make them (caches that own their storage, freed after the search),
 * where this checkout has that (its encodeSources takes `own` and it exports releaseStepper); else as before.
 */
const encodeSources = search.encodeSources as (...a: unknown[]) => ReturnType<typeof search.encodeSources>;
const releaseStepper = (s: unknown) => (search as { releaseStepper?: (s: unknown) => void }).releaseStepper?.(s);
import type { Stepper } from '../src/decode/stepper.ts';
import type { Seq2Seq } from '../src/models/seq2seq.ts';
import { withEvalMode } from '../src/nn/module.ts';
import { openTranslation } from '../src/pipelines/load.ts';
import type { BpeTokenizer } from '../src/text/bpe.ts';
import { memoryScope } from '../src/index.ts';
import { RECIPE, trainer } from './train-step.ts';

const args = process.argv.slice(2);
const opt = (name: string, d: number) => (args.includes(name) ? Number(args[args.indexOf(name) + 1]) : d);
const LINES = opt('--lines', 64);
const STEPS = opt('--steps', 3);
const be = getBackend().name;

const lines = gunzipSync(readFileSync(new URL('../../shared/data/multi30k/val.en.gz', import.meta.url)))
  .toString('utf8')
  .split('\n')
  .slice(0, LINES);

/** `stepper` with every step's log-probabilities and last ids fed into `h`. */
function hashing(stepper: Stepper, h: ReturnType<typeof createHash>): Stepper {
  return {
    get rows() {
      return stepper.rows;
    },
    get vocabSize() {
      return stepper.vocabSize;
    },
    reorder: (rows) => {
      h.update(new Uint8Array(rows.buffer, rows.byteOffset, rows.byteLength));
      stepper.reorder(rows);
    },
    step: (last) => {
      h.update(new Uint8Array(last.buffer, last.byteOffset, last.byteLength));
      const lp = stepper.step(last);
      h.update(new Uint8Array(lp.buffer, lp.byteOffset, lp.byteLength));
      return lp;
    },
  };
}

const result: Record<string, string | number[]> = { backend: be };
for (const ensemble of [true, false]) {
  const opened = await openTranslation('models/multi30k-en-de', ensemble);
  if (opened.kind !== 'seq2seq') throw new Error('ab-bytes: models/multi30k-en-de is not a qkv translation folder');
  const model: Seq2Seq | Seq2Seq[] = ensemble ? opened.members : opened.model;
  const tok = opened.tokenizer as BpeTokenizer;
  const ids = { bosId: tok.bosId, eosId: tok.eosId };
  const { ids: srcIds } = encodeLines(opened.model, tok, lines, {});
  for (const beam of [1, 4]) {
    const h = createHash('sha256');
    for (const batch of sourceBatches(srcIds, tok.padId, { beam, alpha: 0.6, batchSize: 32 })) {
      const { members, maxLens, padId } = prepareSearch(model, batch.src, ids);
      const out = withEvalMode(members, () =>
        noGrad(() => {
          const inner = encodeSources(members, batch.src, ids, true);
          const stepper = hashing(inner, h);
          const out =
            beam > 1
              ? beamSearchSteps(stepper, maxLens, { ...ids, padId, beamSize: beam, lengthPenalty: 0.6 })
              : greedySearch(stepper, maxLens, { ...ids, padId });
          releaseStepper(inner);
          return out;
        }),
      );
      h.update(JSON.stringify(out));
    }
    result[`${ensemble ? 'ensemble' : 'member'}-beam${beam}`] = h.digest('hex').slice(0, 16);
  }
}

const { step, model } = trainer(be, RECIPE, 32, 16);
result.losses = Array.from({ length: STEPS }, () => memoryScope(step));
const ph = createHash('sha256');
for (const p of model.parameters()) {
  const d = p.dataSync() as Float32Array;
  ph.update(new Uint8Array(d.buffer, d.byteOffset, d.byteLength));
}
result.params = ph.digest('hex').slice(0, 16);
console.log(JSON.stringify(result));
process.exit(0);
