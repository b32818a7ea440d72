/**
 * PyTorch parity: every fixture in test/fixtures was written by scripts/fixtures/make_fixtures.py
 * from torch 1.13 (weights, inputs, outputs and all gradients). Each case is rebuilt here through
 * the public API from the fixture's config, the PyTorch weights are loaded by their state-dict
 * names, and outputs and gradients must match within 1e-4 + 1e-4·|torch|. Values are read with `await t.data()`,
 * so the file runs on every backend, webgpu included (scripts/test.mjs).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { F, io, nn, type Tensor } from '../src/index.ts';
import { assertCloseAsync } from './helpers/assert.ts';

const dir = new URL('./fixtures/', import.meta.url);
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.safetensors'))
  .sort();

interface Config {
  kind: 'op' | 'module';
  op?: string;
  module?: string;
  // biome-ignore lint/suspicious/noExplicitAny: the fixture's JSON arguments, of every op's own shape.
  args: Record<string, any>;
  // biome-ignore lint/suspicious/noExplicitAny: as args.
  forward?: Record<string, any>;
  inputsPresent: string[];
  diffInputs: string[];
}

interface Run {
  outputs: Record<string, Tensor>;
  params: Record<string, Tensor>;
}

function runOp(cfg: Config, x: Record<string, Tensor>): Run {
  const a = cfg.args;
  const out = ((): Record<string, Tensor> => {
    switch (cfg.op) {
      case 'linear':
        return { output: F.linear(x.x, x.weight, x.bias) };
      case 'matmul':
        return { output: F.matmul(x.a, x.b) };
      case 'softmax':
        return { output: F.softmax(x.x, a.dim) };
      case 'log_softmax':
        return { output: F.logSoftmax(x.x, a.dim) };
      case 'layer_norm':
        return { output: F.layerNorm(x.x, a.normalizedShape, x.weight, x.bias, a.eps) };
      case 'gelu':
        return { output: F.gelu(x.x) };
      case 'relu':
        return { output: F.relu(x.x) };
      case 'cross_entropy':
        return {
          output: F.crossEntropy(x.logits, x.target, {
            ignoreIndex: a.ignoreIndex,
            labelSmoothing: a.labelSmoothing,
            reduction: a.reduction,
          }),
        };
      case 'embedding':
        return { output: F.embedding(x.ids, x.weight, a.paddingIdx) };
      case 'scaled_dot_product_attention': {
        const r = F.attention(x.query, x.key, x.value, {
          attnMask: x.attnMask,
          isCausal: a.isCausal,
          scale: a.scale,
          needWeights: true,
        });
        return { output: r.output, weights: r.weights! };
      }
      default:
        throw new Error(`unknown op ${cfg.op}`);
    }
  })();
  return { outputs: out, params: {} };
}

function buildModule(cfg: Config): nn.Module {
  const a = cfg.args;
  switch (cfg.module) {
    case 'Linear':
      return new nn.Linear(a.inFeatures, a.outFeatures, { bias: a.bias });
    case 'LayerNorm':
      return new nn.LayerNorm(a.normalizedShape, { eps: a.eps });
    case 'Embedding':
      return new nn.Embedding(a.numEmbeddings, a.embeddingDim, { paddingIdx: a.paddingIdx });
    case 'MultiheadAttention':
      return new nn.MultiheadAttention(a.embedDim, a.numHeads, a);
    case 'TransformerEncoderLayer':
      return new nn.TransformerEncoderLayer(a as nn.TransformerLayerOptions);
    case 'TransformerDecoderLayer':
      return new nn.TransformerDecoderLayer(a as nn.TransformerLayerOptions);
    case 'TransformerEncoder':
      return new nn.TransformerEncoder(
        new nn.TransformerEncoderLayer(a.layer),
        a.numLayers,
        a.norm ? new nn.LayerNorm(a.layer.dModel, { eps: a.layer.layerNormEps }) : null,
      );
    case 'TransformerDecoder':
      return new nn.TransformerDecoder(
        new nn.TransformerDecoderLayer(a.layer),
        a.numLayers,
        a.norm ? new nn.LayerNorm(a.layer.dModel, { eps: a.layer.layerNormEps }) : null,
      );
    case 'Transformer':
      return new nn.Transformer(a);
    default:
      throw new Error(`unknown module ${cfg.module}`);
  }
}

function forwardModule(m: nn.Module, cfg: Config, x: Record<string, Tensor>): Record<string, Tensor> {
  const f = cfg.forward ?? {};
  if (m instanceof nn.Linear || m instanceof nn.LayerNorm || m instanceof nn.Embedding)
    return { output: m.forward(x.input) };
  if (m instanceof nn.MultiheadAttention) {
    const r = m.forward(x.query, x.key, x.value, {
      keyPaddingMask: x.keyPaddingMask,
      attnMask: x.attnMask,
      needWeights: f.needWeights,
      averageAttnWeights: f.averageAttnWeights,
    });
    return r.weights ? { output: r.output, weights: r.weights } : { output: r.output };
  }
  if (m instanceof nn.TransformerEncoderLayer)
    return { output: m.forward(x.src, { srcMask: x.srcMask, srcKeyPaddingMask: x.srcKeyPaddingMask }) };
  if (m instanceof nn.TransformerEncoder)
    return { output: m.forward(x.src, { mask: x.mask, srcKeyPaddingMask: x.srcKeyPaddingMask }) };
  if (m instanceof nn.TransformerDecoderLayer || m instanceof nn.TransformerDecoder)
    return { output: m.forward(x.tgt, x.memory, x) };
  if (m instanceof nn.Transformer) return { output: m.forward(x.src, x.tgt, x) };
  throw new Error('unreachable');
}

function prefixed(tensors: Record<string, Tensor>, prefix: string): Record<string, Tensor> {
  const out: Record<string, Tensor> = {};
  for (const [k, v] of Object.entries(tensors)) if (k.startsWith(prefix)) out[k.slice(prefix.length)] = v;
  return out;
}

test('fixtures are present', () => {
  assert.ok(files.length >= 30, `expected the committed PyTorch fixtures, found ${files.length}`);
});

for (const file of files) {
  test(`PyTorch parity: ${file.replace('.safetensors', '')}`, async () => {
    const { tensors, metadata } = io.readSafetensors(readFileSync(new URL(file, dir)));
    const cfg = JSON.parse(metadata.config) as Config;
    const inputs = prefixed(tensors, 'inputs.');
    for (const name of cfg.diffInputs) inputs[name].requiresGrad_();
    let run: Run;
    if (cfg.kind === 'op') {
      run = runOp(cfg, inputs);
    } else {
      const m = buildModule(cfg);
      m.loadStateDict(prefixed(tensors, 'params.'), { strict: true });
      run = { outputs: forwardModule(m, cfg, inputs), params: m.stateDict() };
    }
    const R = prefixed(tensors, 'R.');
    const expected = prefixed(tensors, 'outputs.');
    assert.deepEqual(Object.keys(run.outputs).sort(), Object.keys(expected).sort(), 'outputs returned');
    let loss: Tensor | null = null;
    for (const [name, out] of Object.entries(run.outputs)) {
      await assertCloseAsync(out, expected[name], `output '${name}'`);
      const term = F.sum(F.mul(out, R[name]));
      loss = loss ? F.add(loss, term) : term;
    }
    loss!.backward();
    const gradParams = prefixed(tensors, 'grads.params.');
    for (const [name, g] of Object.entries(gradParams)) {
      const p = run.params[name];
      assert.ok(p?.grad, `parameter '${name}' received a gradient`);
      await assertCloseAsync(p.grad!, g, `grad of parameter '${name}'`);
    }
    const gradInputs = prefixed(tensors, 'grads.inputs.');
    assert.deepEqual(Object.keys(gradInputs).sort(), [...cfg.diffInputs].sort(), 'differentiable inputs');
    for (const [name, g] of Object.entries(gradInputs)) {
      assert.ok(inputs[name].grad, `input '${name}' received a gradient`);
      await assertCloseAsync(inputs[name].grad!, g, `grad of input '${name}'`);
    }
  });
}
