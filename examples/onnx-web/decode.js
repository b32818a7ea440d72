/**
 * Greedy decoding of a `qkv export --format onnx` folder with ONNX Runtime, in plain JavaScript
 * with no other dependency: pass the `ort` module (onnxruntime-web in a browser, onnxruntime-node
 * in Node). The same steps as qkv's decoders: the prompt or the first target id, then one id per
 * step with the key/value cache (past_key_values in, present out).
 */

/** onnx.json and the sessions of an export folder at `base` (a URL or path prefix ending in '/'). */
export async function openExport(ort, base, options = {}) {
  const manifest = await (await fetch(`${base}onnx.json`)).json();
  const sessions = {};
  for (const [role, file] of Object.entries(manifest.graphs)) {
    sessions[role] = await ort.InferenceSession.create(`${base}${file}`, options);
  }
  return { manifest, sessions };
}

const int64 = (ort, ids, dims) =>
  new ort.Tensor(
    'int64',
    BigInt64Array.from(ids, (x) => BigInt(x)),
    dims,
  );

/** The index of the largest value of row [off, off + n), skipping the ids in `banned`. */
function argmax(x, off, n, banned = []) {
  let best = -1;
  for (let j = 0; j < n; j++) {
    if (banned.includes(j)) continue;
    if (best < 0 || x[off + j] > x[off + best]) best = j;
  }
  return best;
}

/** GPT: `steps` ids after `prompt` (ids), greedily; stops early at `stopId` (included). */
export async function greedyGpt(ort, { manifest, sessions }, prompt, steps, stopId = -1) {
  const { numLayers, numHeads, headDim, vocabSize } = manifest;
  const feeds = {};
  for (let i = 0; i < numLayers; i++) {
    for (const kv of ['key', 'value'])
      feeds[`past_key_values.${i}.${kv}`] = new ort.Tensor('float32', new Float32Array(0), [1, numHeads, 0, headDim]);
  }
  const out = [];
  let fed = prompt;
  for (let n = 0; n < steps; n++) {
    feeds.input_ids = int64(ort, fed, [1, fed.length]);
    const r = await sessions.decoder.run(feeds);
    const id = argmax(r.logits.data, (fed.length - 1) * vocabSize, vocabSize);
    out.push(id);
    if (id === stopId) break;
    for (let i = 0; i < numLayers; i++) {
      for (const kv of ['key', 'value']) feeds[`past_key_values.${i}.${kv}`] = r[`present.${i}.${kv}`];
    }
    fed = [id];
  }
  return out;
}

/**
 * Seq2Seq: the greedy translation (ids, EOS not included) of one source (ids), at most
 * `maxLen` ids; the padding id is never chosen and EOS not at the first step (as qkv's minLen 1).
 */
export async function greedySeq2Seq(ort, { manifest, sessions }, src, { bosId, eosId, maxLen = src.length + 50 }) {
  const { numLayers, vocabSize, padId } = manifest;
  const mask = int64(
    ort,
    src.map(() => 1),
    [1, src.length],
  );
  const { last_hidden_state } = await sessions.encoder.run({
    input_ids: int64(ort, src, [1, src.length]),
    attention_mask: mask,
  });
  let r = await sessions.decoder.run({
    input_ids: int64(ort, [bosId], [1, 1]),
    encoder_attention_mask: mask,
    encoder_hidden_states: last_hidden_state,
  });
  const feeds = { encoder_attention_mask: mask };
  for (let i = 0; i < numLayers; i++) {
    for (const kv of ['key', 'value']) feeds[`past_key_values.${i}.encoder.${kv}`] = r[`present.${i}.encoder.${kv}`];
  }
  const out = [];
  for (;;) {
    const id = argmax(r.logits.data, 0, vocabSize, out.length === 0 ? [padId, eosId] : [padId]);
    if (id === eosId) break;
    out.push(id);
    if (out.length >= maxLen) break;
    for (let i = 0; i < numLayers; i++) {
      for (const kv of ['key', 'value']) feeds[`past_key_values.${i}.decoder.${kv}`] = r[`present.${i}.decoder.${kv}`];
    }
    feeds.input_ids = int64(ort, [id], [1, 1]);
    r = await sessions.decoderWithPast.run(feeds);
  }
  return out;
}
