/**
 * Llama-family Hugging Face folders (models/hf/llama.ts, folder/decoder.ts) against transformers 5.18
 * (scripts/fixtures/make_hf_llama.py): a tied Llama with grouped-query attention (transformers 5's config layout,
 * fp32), an untied Qwen2 with q/k/v biases (the Hub's older layout, bf16 in four shards), a Llama 3 rope_scaling
 * model with head_dim given (fp16), a Mistral with a sliding window of 4. For each, two prompts: the ids the
 * folder's tokenizer gives (Llama 3's Split pre-tokenizer and BOS template), the logits of the prompt, and
 * generate()'s 12 greedy tokens, here through the KV cache (its keys and values at the KV heads' width).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { readLm } from '../../../src/folder/node.ts';
import { decoderConfigFromHf } from '../../../src/models/hf/llama.ts';
import { ByteLevelBpeTokenizer } from '../../../src/text/bytelevel.ts';
import { noGrad, pipeline, Tensor } from '../../../src/index.ts';
import { assertClose } from '../../helpers/assert.ts';

const ROOT = fileURLToPath(new URL('../../fixtures/hf-llama/', import.meta.url));
const FOLDERS = ['llama-gqa-tied', 'qwen2-bias-untied', 'llama3-rope', 'mistral-window'];

interface Case {
  prompt: string;
  ids: number[];
  logits: number[][];
  greedy: number[];
}

for (const name of FOLDERS) {
  test(`${name}: ids, logits and greedy continuation as transformers`, () => {
    const dir = `${ROOT}${name}`;
    const { cases } = JSON.parse(readFileSync(`${dir}/expected.json`, 'utf8')) as { cases: Case[] };
    const lm = readLm(dir);
    assert.ok(lm.tokenizer instanceof ByteLevelBpeTokenizer);
    const m = lm.model;
    for (const c of cases) {
      assert.deepEqual(lm.tokenizer.encodeText(c.prompt).ids, c.ids, `${name}: ids of ${JSON.stringify(c.prompt)}`);
      noGrad(() => {
        const ids = new Tensor(Int32Array.from(c.ids), [1, c.ids.length], 'int32');
        const logits = m.forward(ids);
        assertClose(logits.reshape(c.ids.length, -1), c.logits.flat(), `${name}: logits`, 2e-4, 1e-4);
        // Greedy through the KV cache: prefill, then one token a step.
        const cache = m.initCache();
        let step = m.forwardCached(ids, cache).logits;
        const out: number[] = [];
        for (let t = 0; t < c.greedy.length; t++) {
          const last = step
            .reshape(step.shape[1], -1)
            .dataSync<Float32Array>()
            .subarray((step.shape[1] - 1) * m.config.vocabSize);
          let best = 0;
          for (let j = 1; j < last.length; j++) if (last[j] > last[best]) best = j;
          out.push(best);
          step = m.forwardCached(new Tensor(Int32Array.of(best), [1, 1], 'int32'), cache).logits;
        }
        assert.deepEqual(out, c.greedy, `${name}: greedy continuation of ${JSON.stringify(c.prompt)}`);
        const hKV = m.config.nKVHead ?? m.config.nHead;
        assert.equal(cache.layers[0].k!.shape[1], hKV, 'the cache holds the KV heads only');
      });
    }
  });
}

test("pipeline('text-generation') on each folder: its tokenizer's BOS, greedy by its generation_config.json", async () => {
  for (const name of FOLDERS) {
    const dir = `${ROOT}${name}`;
    const { cases } = JSON.parse(readFileSync(`${dir}/expected.json`, 'utf8')) as { cases: Case[] };
    const generate = await pipeline('text-generation', dir);
    for (const c of cases) {
      const ids: number[] = [];
      await generate(c.prompt, { maxNewTokens: c.greedy.length, onToken: (_, id) => ids.push(id) });
      assert.deepEqual(ids, c.greedy, `${name}: the pipeline's continuation of ${JSON.stringify(c.prompt)}`);
    }
  }
});

test('the config in both layouts: rope_parameters (transformers 5) and rope_theta/rope_scaling (older)', () => {
  const base = {
    model_type: 'llama',
    vocab_size: 10,
    hidden_size: 8,
    intermediate_size: 12,
    num_hidden_layers: 1,
    num_attention_heads: 2,
    max_position_embeddings: 16,
  };
  const scaling = { factor: 8, low_freq_factor: 1, high_freq_factor: 4, original_max_position_embeddings: 8192 };
  const newer = decoderConfigFromHf({ ...base, rope_parameters: { rope_type: 'llama3', rope_theta: 5e5, ...scaling } });
  const older = decoderConfigFromHf({ ...base, rope_theta: 5e5, rope_scaling: { rope_type: 'llama3', ...scaling } });
  const oldest = decoderConfigFromHf({ ...base, rope_theta: 5e5, rope_scaling: { type: 'llama3', ...scaling } });
  assert.deepEqual(newer, older);
  assert.deepEqual(newer, oldest);
  assert.deepEqual(newer.rope, {
    base: 5e5,
    scaling: { type: 'llama3', factor: 8, lowFreqFactor: 1, highFreqFactor: 4, originalMaxPositionEmbeddings: 8192 },
  });
  assert.equal(newer.tiedHead, false, "transformers' LlamaConfig default: untied");
  assert.equal(decoderConfigFromHf({ ...base, model_type: 'qwen2' }).qkvBias, true);
  assert.throws(() => decoderConfigFromHf({ ...base, hidden_act: 'gelu' }), /hidden_act 'gelu' is not supported/);
  assert.throws(
    () => decoderConfigFromHf({ ...base, rope_parameters: { rope_type: 'yarn', rope_theta: 1e4 } }),
    /rope_parameters rope_type 'yarn' is not supported/,
  );
  assert.throws(
    () => decoderConfigFromHf({ ...base, num_key_value_heads: 3 }),
    /num_attention_heads 2 is not a multiple of num_key_value_heads 3/,
  );
});
