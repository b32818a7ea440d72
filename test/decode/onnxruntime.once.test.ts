/**
 * The two engines decode alike: the shipped translation model, exported to ONNX (fp32) and run
 * in onnxruntime-node through the same search code, translates all 1,000 test_2016_flickr
 * sentences exactly as qkv does, greedy and beam 4 (α of the model's config); the shipped GPT
 * continues prompts greedily, and samples with a seed, exactly as qkv does.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import * as ort from 'onnxruntime-node';
import { encodeLines, translateIds } from '../../src/decode/batch.ts';
import { DEFAULT_DECODING, loadLmDir, loadModelDir } from '../../src/cli/files.ts';
import { SESSION_OPTIONS, translateIdsOnnx } from '../../src/cli/onnxruntime.ts';
import { generate, generateStreamAsync, type GenerateOptions } from '../../src/decode/gpt.ts';
import { OrtGpt, OrtSeq2Seq } from '../../src/decode/onnxruntime.ts';
import { exportGptOnnx, exportSeq2SeqOnnx } from '../../src/io/onnx/export.ts';
import { setNumThreads } from '../../src/backend/wasm/threads.ts';

const root = new URL('../../', import.meta.url).pathname;

// Two threads on each side, in one process: the configuration in which a full CI run hung twice
// (the main thread blocked in a futex, qkv's wasm worker and ONNX Runtime's pools idle, ~16 s into
// decoding; issue 41). qkv's pool has since been soaked with pauses injected into every step of a
// launch, beside ONNX Runtime and beside a second pool (scripts/soak-threads.ts,
// records/thread-pool-soak/), and its join no longer sleeps unbounded: it re-checks its counters
// and fails with every worker's state if a worker is gone. Threads do not change what either
// engine computes (qkv splits GEMMs by rows and columns, never along k). The timeout stays, so
// a hang on either side fails this file instead of stalling CI.
setNumThreads(2);
const OPTIONS = { ...SESSION_OPTIONS, intraOpNumThreads: 2, interOpNumThreads: 1 };
const TIMEOUT = { timeout: 12 * 60_000 };

test(
  "translation: ONNX Runtime gives qkv's greedy and beam-4 translations of all 1,000 test_2016_flickr sentences",
  TIMEOUT,
  async () => {
    const { model, tokenizer, targetTokenizer, config } = loadModelDir(join(root, 'models/multi30k-en-de'));
    const exp = exportSeq2SeqOnnx(model.config, model.stateDict(), { dtype: 'fp32', withAttention: false });
    const s = (f: string) => ort.InferenceSession.create(exp.files[f], OPTIONS);
    const engine = new OrtSeq2Seq(
      ort,
      {
        encoder: await s(exp.manifest.graphs.encoder),
        decoder: await s(exp.manifest.graphs.decoder),
        decoderWithPast: await s(exp.manifest.graphs.decoderWithPast),
      },
      exp.manifest,
    );
    const lines = gunzipSync(readFileSync(join(root, 'data/multi30k/test_2016_flickr.en.gz')))
      .toString('utf8')
      .split('\n')
      .filter((l) => l !== '');
    assert.equal(lines.length, 1000);
    const srcIds = encodeLines(model, tokenizer, lines).ids;
    const alpha = (config.decoding ?? DEFAULT_DECODING).alpha;
    for (const beam of [1, 4]) {
      const o = { beam, alpha };
      const qkv = translateIds(model, targetTokenizer, srcIds, o);
      const onnx = await translateIdsOnnx(engine, targetTokenizer, srcIds, o);
      const differ = qkv.map((_q, i) => i).filter((i) => qkv[i] !== onnx[i]);
      assert.deepEqual(
        differ.map((i) => `${i}: qkv '${qkv[i]}' / ONNX Runtime '${onnx[i]}'`),
        [],
        `beam ${beam}: ${differ.length} of 1000 differ`,
      );
      assert.ok(qkv.every((t) => t.length > 0));
    }
  },
);

test(
  'language model: ONNX Runtime continues prompts as qkv does (greedy, and sampling with a seed, past the context)',
  TIMEOUT,
  async () => {
    const { model, tokenizer } = loadLmDir(join(root, 'models/gpt-multi30k-char'));
    const exp = exportGptOnnx(model.config, model.stateDict(), { dtype: 'fp32', withAttention: false });
    const lm = new OrtGpt(
      ort,
      await ort.InferenceSession.create(exp.files[exp.manifest.graphs.decoder], OPTIONS),
      exp.manifest,
    );
    const prompts = ['A man', 'Two dogs are', 'A little girl in a pink dress', 'People'];
    const cases: GenerateOptions[] = [
      { maxTokens: 60, temperature: 0 },
      { maxTokens: 200, temperature: 0 }, // beyond blockSize 128: the context is cut and the cache rebuilt
      { maxTokens: 60, temperature: 0.8, topK: 20, seed: 4 },
    ];
    for (const p of prompts) {
      const ids = [...tokenizer.encode(p)];
      for (const o of cases) {
        const want = generate(model, ids, o).ids;
        const got: number[] = [];
        for await (const t of generateStreamAsync(lm, ids, o)) got.push(t.id);
        assert.equal(want.length, o.maxTokens);
        assert.deepEqual(
          got,
          want,
          `'${p}' ${JSON.stringify(o)}: ONNX Runtime '${tokenizer.decode(got)}' vs qkv '${tokenizer.decode(want)}'`,
        );
      }
    }
  },
);
