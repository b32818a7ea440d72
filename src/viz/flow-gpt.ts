/**
 * The flow of a GPT (qkv's, Hugging Face GPT-2): GPT.forward composed from the model's public modules,
 * stage by stage (flow-core.ts says how, flow.ts is the entry).
 */
import { noGrad } from '../autograd/grad-mode.ts';
import type { GPT, MLP } from '../models/gpt.ts';
import { withEvalMode } from '../nn/module.ts';
import * as F from '../ops/index.ts';
import { Tensor } from '../tensor/tensor.ts';
import {
  ACTIVATION_NAMES,
  attend,
  checkOptions,
  idTensor,
  outputStages,
  Recorder,
  type FlowOptions,
  type FlowRun,
  type FlowStageKind,
} from './flow-core.ts';

/** The flow of a GPT over ids (GPT.forward: embedding, pre-norm blocks, ln_f, the tied head). */
export function gptFlow(model: GPT, ids: readonly number[], options: FlowOptions = {}): FlowRun {
  return recordGptFlow(model, ids, options, false).run;
}

/** {@link gptFlow} on every device: the stages' numbers read back asynchronously after the pass. */
export async function gptFlowAsync(model: GPT, ids: readonly number[], options: FlowOptions = {}): Promise<FlowRun> {
  const { run, rec } = recordGptFlow(model, ids, options, true);
  await rec.readAll();
  return run;
}

/** The pass of gptFlow, its stages read by a recorder that reads at once or, `deferred`, when asked. */
export function recordGptFlow(
  model: GPT,
  ids: readonly number[],
  options: FlowOptions,
  deferred: boolean,
): { run: FlowRun; rec: Recorder } {
  const { dims, top, label } = checkOptions(options);
  const c = model.config;
  const input = idTensor(ids, 'the text');
  if (ids.length > c.blockSize) throw new Error(`flow: ${ids.length} tokens, more than the context of ${c.blockSize}`);
  if (c.positions === 'rotary' || c.mlp === 'swiglu' || c.norm === 'rms' || c.tiedHead === false)
    throw new Error('flow: the flow view draws GPT-2-style models; Llama-family decoders are not drawn yet');
  const rec = new Recorder(dims, deferred);
  const axis = 'tokens' as const;
  const logits = withEvalMode(model, () =>
    noGrad(() => {
      const T = ids.length;
      const group = 'embedding';
      const base = { group, layer: null, axis };
      rec.add(
        { id: 'embed', ...base, kind: 'embedding', title: 'token embedding', formula: 'wte[token]' },
        model.wte.forward(input),
      );
      const pos = model.wpe
        ? model.wpe.forward(
            new Tensor(
              Int32Array.from({ length: T }, (_, i) => i),
              [T],
              'int32',
            ),
          )
        : F.narrow(model.pe!, 0, 0, T);
      rec.add(
        {
          id: 'pos',
          ...base,
          kind: 'position',
          title: 'positional encoding',
          formula: model.wpe ? 'wpe[position] (learned)' : 'PE(pos) (sinusoids)',
        },
        pos.reshape(1, T, c.nEmbd),
      );
      let x = model.embed(input);
      rec.add({ id: 'input', ...base, kind: 'sum', title: 'embedding + position', formula: 'x₀ = wte + wpe' }, x);
      let i = 0;
      for (const block of model.h) {
        const l = i++;
        const meta = (id: string, kind: FlowStageKind, title: string, formula: string) => ({
          id: `h.${l}.${id}`,
          group: `block ${l + 1}`,
          layer: l,
          kind,
          title,
          formula,
          axis,
        });
        // Block.forward: x + attn(ln_1(x)), then x + mlp(ln_2(x)).
        const h = block.ln1.forward(x);
        rec.add(meta('ln1', 'norm', 'LayerNorm (ln_1)', 'ln_1(x)'), h);
        const r = attend(rec, block.attn, h, null, { isCausal: true });
        const a = block.residDropout.forward(r.output);
        rec.add(meta('attn', 'attention', 'causal self-attention', 'softmax(QKᵀ/√dₖ + mask)·V per head, ·Wᴼ'), a, {
          keys: axis,
          causal: true,
          heads: r.heads,
        });
        x = F.add(x, a);
        rec.add(meta('add1', 'residual', 'x + attention', 'x + Attention(ln_1(x))'), x);
        const h2 = block.ln2.forward(x);
        rec.add(meta('ln2', 'norm', 'LayerNorm (ln_2)', 'ln_2(x)'), h2);
        const mlp = block.mlp as MLP;
        const act = mlp.activation;
        const hidden = F.gelu(mlp.fc.forward(h2), act === 'gelu_tanh' ? 'tanh' : 'none');
        rec.add(meta('mlp.hidden', 'ffn-hidden', `MLP: ${ACTIVATION_NAMES[act]}`, 'gelu(x·W_fc + b)'), hidden);
        const m = mlp.dropout.forward(mlp.proj.forward(hidden));
        rec.add(meta('mlp.out', 'ffn-out', 'MLP: out', 'MLP(x) = hidden·W_proj + b'), m);
        x = F.add(x, m);
        rec.add(meta('add2', 'residual', 'x + MLP', 'x + MLP(ln_2(x))'), x);
      }
      const hF = model.lnF.forward(x);
      rec.add(
        { id: 'ln_f', group: 'output', layer: null, axis, kind: 'norm', title: 'final LayerNorm', formula: 'ln_f(x)' },
        hF,
      );
      const out = model.wte.attend(hF); // the tied head, float or quantized (model.head without ln_f)
      outputStages(rec, out, axis, top, (id) => label(id, axis));
      return out;
    }),
  );
  const run: FlowRun = {
    flow: {
      model: 'gpt',
      config: {
        dModel: c.nEmbd,
        heads: c.nHead,
        layers: [c.nLayer],
        dFF: 4 * c.nEmbd,
        vocabSize: c.vocabSize,
        norm: 'pre',
      },
      dims,
      axes: { tokens: { ids: [...ids], tokens: ids.map((id) => label(id, axis)) } },
      stages: rec.stages,
    },
    logits,
    vectors: (id) => rec.vectors(id),
  };
  return { run, rec };
}
