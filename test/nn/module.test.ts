import { test } from 'node:test';
import assert from 'node:assert/strict';
import { F, nn, randn, tensor, zeros } from '../../src/index.ts';

test("state-dict keys are PyTorch's", () => {
  const t = new nn.Transformer({ dModel: 8, nhead: 2, numEncoderLayers: 1, numDecoderLayers: 1, dimFeedforward: 16 });
  const keys = Object.keys(t.stateDict());
  for (const k of [
    'encoder.layers.0.self_attn.in_proj_weight',
    'encoder.layers.0.self_attn.in_proj_bias',
    'encoder.layers.0.self_attn.out_proj.weight',
    'encoder.layers.0.self_attn.out_proj.bias',
    'encoder.layers.0.linear1.weight',
    'encoder.layers.0.linear2.bias',
    'encoder.layers.0.norm1.weight',
    'encoder.layers.0.norm2.bias',
    'encoder.norm.weight',
    'decoder.layers.0.multihead_attn.in_proj_weight',
    'decoder.layers.0.norm3.bias',
    'decoder.norm.bias',
  ])
    assert.ok(keys.includes(k), `missing ${k}`);
  assert.equal(keys.length, 12 + 2 + 18 + 2); // enc layer 12, enc norm 2, dec layer 18, dec norm 2
  const kv = new nn.MultiheadAttention(8, 2, { kdim: 3, vdim: 5, bias: false });
  assert.deepEqual(Object.keys(kv.stateDict()), ['q_proj_weight', 'k_proj_weight', 'v_proj_weight', 'out_proj.weight']);
});

test('parameter counts: paper base Transformer (torch.nn.Transformer() default) = 44,140,544', () => {
  // Count without allocating 44M floats twice: build the layers' shapes arithmetically and compare
  // with a small instance whose count is verified by hand.
  const small = new nn.Transformer({
    dModel: 8,
    nhead: 2,
    numEncoderLayers: 1,
    numDecoderLayers: 1,
    dimFeedforward: 16,
  });
  // enc layer: MHA 4·64+4·8=288, FFN 8·16+16+16·8+8=280, 2 norms 32 -> 600; dec: 288·2+280+48 = 904; final norms 32.
  assert.equal(small.numParameters(), 600 + 904 + 32);
  const base = new nn.Transformer();
  assert.equal(base.numParameters(), 44140544);
});

test('loadStateDict: strict key checking, shape errors, non-strict report, values copied in place', () => {
  const a = new nn.Linear(3, 2);
  const b = new nn.Linear(3, 2);
  const w = a.weight;
  a.loadStateDict(b.stateDict());
  assert.equal(a.weight, w, 'parameter tensor identity kept');
  assert.deepEqual(a.weight.toArray(), b.weight.toArray());
  assert.throws(() => a.loadStateDict({ weight: zeros(2, 3) }), /missing keys: bias/);
  assert.throws(
    () => a.loadStateDict({ weight: zeros(2, 3), bias: zeros(2), extra: zeros(1) }),
    /unexpected keys: extra/,
  );
  assert.throws(
    () => a.loadStateDict({ weight: zeros(3, 2), bias: zeros(2) }),
    /'weight' expected shape \[2, 3\], got \[3, 2\]/,
  );
  assert.throws(
    () => a.loadStateDict({ weight: zeros(2, 3), bias: tensor(new Int32Array(2), [2]) }),
    /'bias' expected dtype float32, got int32/,
  );
  const res = a.loadStateDict({ weight: zeros(2, 3), extra: zeros(1) }, { strict: false });
  assert.deepEqual(res, { missingKeys: ['bias'], unexpectedKeys: ['extra'] });
  assert.deepEqual(a.weight.toArray(), [0, 0, 0, 0, 0, 0]);
});

test('module construction errors name the argument', () => {
  assert.throws(
    () => new nn.MultiheadAttention(10, 4),
    /MultiheadAttention: embedDim 10 is not divisible by numHeads 4/,
  );
  assert.throws(() => new nn.Linear(0, 3), /Linear: inFeatures must be a positive integer, got 0/);
  assert.throws(() => new nn.Embedding(5, 2, { paddingIdx: 5 }), /paddingIdx must be within numEmbeddings 5, got 5/);
  assert.throws(() => new nn.Dropout(1.5), /Dropout: p must be in \[0, 1\], got 1.5/);
});

test('forward shape errors name the argument, expected and actual', () => {
  const mha = new nn.MultiheadAttention(8, 2, { batchFirst: true, kdim: 4 });
  const q = randn([2, 3, 8]);
  assert.throws(
    () => mha.forward(q, randn([2, 5, 8]), randn([2, 5, 8])),
    /key feature size must be kdim 4, got shape \[2, 5, 8\]/,
  );
  assert.throws(
    () => mha.forward(randn([2, 3, 6]), randn([2, 5, 4]), randn([2, 5, 8])),
    /query feature size must be embedDim 8, got shape \[2, 3, 6\]/,
  );
  assert.throws(() => mha.forward(q, randn([3, 5, 4]), randn([3, 5, 8])), /batch size must match query's 2/);
  assert.throws(
    () => mha.forward(q, randn([2, 5, 4]), randn([2, 5, 8]), { keyPaddingMask: tensor([[true, false]]) }),
    /keyPaddingMask must have shape \[2, 5\] \(N, S\), got \[1, 2\]/,
  );
  assert.throws(
    () => mha.forward(q, randn([2, 5, 4]), randn([2, 5, 8]), { attnMask: zeros(3, 4) }),
    /2-D attnMask must have shape \[3, 5\] \(L, S\), got \[3, 4\]/,
  );
  assert.throws(
    () => new nn.Linear(4, 2).forward(randn([3, 5])),
    /linear: input last dim must be 4 \(weight shape \[2, 4\]\), got input shape \[3, 5\]/,
  );
  assert.throws(
    () => new nn.LayerNorm(4).forward(randn([3, 5])),
    /input shape \[3, 5\] does not end with normalizedShape \[4\]/,
  );
  assert.throws(
    () => new nn.Embedding(4, 2).forward(tensor(new Int32Array([1, 4]), [2])),
    /index 4 at position 1 is out of range for 4 embeddings/,
  );
  assert.throws(() => new nn.Embedding(4, 2).forward(tensor([1, 2])), /input ids must be int32, got float32/);
  const t = new nn.Transformer({
    dModel: 8,
    nhead: 2,
    numEncoderLayers: 1,
    numDecoderLayers: 1,
    dimFeedforward: 8,
    batchFirst: true,
  });
  assert.throws(
    () => t.forward(randn([2, 3, 8]), randn([3, 3, 8])),
    /batch number of src and tgt must be equal, got src 2 and tgt 3/,
  );
  assert.throws(() => F.matmul(randn([2, 3]), randn([4, 2])), /cannot be multiplied \(3 != 4\)/);
  assert.throws(() => F.add(randn([2, 3]), randn([4])), /shapes \[2, 3\] and \[4\] cannot be broadcast/);
  assert.throws(
    () => F.crossEntropy(randn([2, 3]), tensor(new Int32Array([0, 3]), [2])),
    /target 3 at position 1 is out of range for 3 classes/,
  );
});

test('train/eval propagate; dropout only in training; zeroGrad clears', () => {
  const layer = new nn.TransformerEncoderLayer({ dModel: 8, nhead: 2, dimFeedforward: 8, dropout: 0.5 });
  layer.eval();
  assert.equal(layer.selfAttn.training, false);
  assert.equal(layer.dropout1.training, false);
  const x = randn([3, 2, 8]);
  assert.deepEqual(layer.forward(x).toArray(), layer.forward(x).toArray(), 'eval is deterministic');
  layer.train();
  assert.equal(layer.norm1.training, true);
  assert.notDeepEqual(layer.forward(x).toArray(), layer.forward(x).toArray(), 'dropout active in training');
  F.sum(layer.forward(x)).backward();
  assert.ok(layer.linear1.weight.grad);
  const g = layer.linear1.weight.grad!;
  layer.zeroGrad(); // torch 1.13's default: zero in place
  assert.equal(layer.linear1.weight.grad, g);
  assert.ok(g.toArray().every((v) => v === 0));
  layer.zeroGrad(true);
  assert.equal(layer.linear1.weight.grad, null);
});

test("TransformerEncoder clones start from the template layer's weights, as torch deep-copies", () => {
  const enc = new nn.TransformerEncoder(new nn.TransformerEncoderLayer({ dModel: 8, nhead: 2, dimFeedforward: 8 }), 3);
  const w0 = enc.layers.at(0).linear1.weight;
  const w2 = enc.layers.at(2).linear1.weight;
  assert.notEqual(w0, w2);
  assert.deepEqual(w0.toArray(), w2.toArray());
});

test("withEvalMode: eval mode inside, each submodule's own mode restored after a return or a throw", () => {
  const t = new nn.Transformer({ dModel: 8, nhead: 2, numEncoderLayers: 1, numDecoderLayers: 1, dimFeedforward: 16 });
  t.train();
  t.decoder.eval(); // a mixed state must come back as it was, not all-train
  const modes = () => t.namedModules().map(([, m]) => m.training);
  const before = modes();
  assert.equal(
    nn.withEvalMode(t, () => modes().every((m) => !m)),
    true,
  );
  assert.deepEqual(modes(), before);
  assert.throws(
    () =>
      nn.withEvalMode([t], () => {
        throw new Error('inside');
      }),
    /inside/,
  );
  assert.deepEqual(modes(), before);
});
