/**
 * models/hf/lm-generation.ts: a causal LM folder's generation defaults as transformers 5.18 applies them with no
 * options (GenerationConfig defaults, `_prepare_generated_length`), and the keys it refuses by name. The
 * end-to-end check against transformers itself is test/pipelines/hf-defaults.once.test.ts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { hfLmGeneration, hfNewTokens } from '../../../src/models/hf/lm-generation.ts';

test("transformers' defaults: greedy, top_k 50 and temperature 1 when sampling, 20 new tokens within the context", () => {
  const g = hfLmGeneration({ bos_token_id: 1, eos_token_id: 2, n_embd: 8 }, undefined, 'config.json');
  assert.equal(g.file, 'config.json');
  assert.deepEqual(
    [g.doSample, g.temperature, g.topK, g.topP, g.repetitionPenalty, g.eosTokenIds, g.bosTokenId],
    [false, 1, 50, 1, 1, [2], 1],
  );
  assert.deepEqual(g.set, { bos_token_id: 1, eos_token_id: 2 }); // n_embd is no generation key
  assert.equal(hfNewTokens(g, 5, 1024), 20);
  assert.equal(hfNewTokens(g, 60, 64), 4); // capped at the context, as max_position_embeddings caps it
});

test('generation_config.json wins over config.json; max_new_tokens over max_length; max_length counts the prompt', () => {
  const cfg = { do_sample: true, eos_token_id: 9 };
  const g = hfLmGeneration(cfg, { max_length: 30, eos_token_id: [3, 4], transformers_version: '5.18.0' });
  assert.equal(g.file, 'generation_config.json');
  assert.equal(g.doSample, false);
  assert.deepEqual(g.eosTokenIds, [3, 4]);
  assert.deepEqual(g.set, { max_length: 30, eos_token_id: [3, 4] });
  assert.equal(hfNewTokens(g, 12, 1024), 18);
  assert.throws(
    () => hfNewTokens(g, 30, 1024),
    /the prompt is 30 tokens, and the folder's generation_config\.json sets max_length 30/,
  );
  assert.equal(hfNewTokens(hfLmGeneration({}, { max_length: 30, max_new_tokens: 7 }), 12, 1024), 7);
});

test('keys that change the output and that qkv does not apply are refused by name; their defaults pass', () => {
  for (const [k, v] of [
    ['num_beams', 4],
    ['no_repeat_ngram_size', 3],
    ['bad_words_ids', [[5]]],
    ['typical_p', 0.9],
    ['forced_eos_token_id', 2],
    ['num_return_sequences', 2],
  ] as const)
    assert.throws(
      () => hfLmGeneration({}, { [k]: v }),
      new RegExp(
        `^Error: generation_config\\.json: ${k} ${JSON.stringify(v).replace(/[[\]]/g, '\\$&')} is not supported`,
      ),
    );
  const ok = hfLmGeneration(
    {},
    { num_beams: 1, typical_p: 1, bad_words_ids: null, renormalize_logits: true, use_cache: true },
  );
  assert.equal(ok.doSample, false);
});

test('bad values name the file, the key, what was expected and what came', () => {
  assert.throws(
    () => hfLmGeneration({}, { do_sample: 'yes' }),
    /generation_config\.json: do_sample must be true or false, got "yes"/,
  );
  assert.throws(() => hfLmGeneration({}, { top_p: 1.5 }), /top_p must be in \(0, 1\], got 1\.5/);
  assert.throws(() => hfLmGeneration({}, { top_k: 2.5 }), /top_k must be an integer >= 0, got 2\.5/);
  assert.throws(() => hfLmGeneration({}, { repetition_penalty: 0 }), /repetition_penalty must be a number > 0, got 0/);
  assert.throws(
    () => hfLmGeneration({}, { eos_token_id: 'x' }),
    /eos_token_id must be an id or a list of ids, got "x"/,
  );
  assert.throws(() => hfLmGeneration({}, []), /generation_config\.json: expected a JSON object/);
});
