/**
 * The flow of a GPT (qkv's, Hugging Face GPT-2) and of a Llama-family decoder (Llama, Qwen2, Mistral: the same GPT
 * class with its switches): GPT.forward composed from the model's public modules, stage by stage (flow-core.ts says
 * how, flow.ts is the entry). A Llama-family block draws its RMSNorms, its queries and keys turned by the rotary
 * angles (no position table: the embedding group shows the angles' cos and sin instead), its grouped-query attention
 * (each query head naming the KV head its group shares) and the SwiGLU MLP's gate, up and gated product.
 */
import { noGrad } from '../autograd/grad-mode.ts';
import type { Block, GPT, MLP, RopeTables } from '../models/gpt.ts';
import type { SwiGLU } from '../nn/layers.ts';
import { withEvalMode } from '../nn/module.ts';
import * as F from '../ops/index.ts';
import { Tensor } from '../tensor/tensor.ts';
import {
  ACTIVATION_NAMES,
  activate,
  attend,
  attendProjected,
  checkOptions,
  idTensor,
  outputStages,
  Recorder,
  type FlowHead,
  type FlowOptions,
  type FlowRun,
  type FlowStageKind,
} from './flow-core.ts';

/** A stage's place and names in a block (the recorder adds its numbers). */
type BlockMeta = (
  id: string,
  kind: FlowStageKind,
  title: string,
  formula: string,
) => {
  id: string;
  group: string;
  layer: number;
  kind: FlowStageKind;
  title: string;
  formula: string;
  axis: 'tokens';
};

/** (1, heads, T, dK) → (1, T, heads·dK): every head's vector of a token side by side, as the stream is split. */
const joinHeads = (t: Tensor): Tensor => {
  const [, h, T, dK] = t.shape;
  return F.permute(t, [0, 2, 1, 3]).reshape(1, T, h * dK);
};

/**
 * The attention of a block that turns its queries and keys (rotary) or has a sliding window, as Block.forward runs
 * it: its projections, the queries and keys turned (two stages, every head side by side), then the attention of
 * the turned queries over the turned keys, each query head reading its group's KV head.
 */
function projectedAttention(
  rec: Recorder,
  block: Block,
  h: Tensor,
  rope: RopeTables | null,
  meta: BlockMeta,
): { output: Tensor; heads: FlowHead[] } {
  const T = h.shape[1];
  let { q, k, v } = block.attn.projectSelf(h);
  if (rope) {
    q = F.rotaryEmbedding(q, rope.cos, rope.sin);
    k = F.rotaryEmbedding(k, rope.cos, rope.sin);
    rec.add(
      meta('q', 'position', 'queries, turned (RoPE)', 'qₜ = RoPE(x·W_Q, t) per head: pair i turned by t·θᵢ'),
      joinHeads(q),
    );
    rec.add(
      meta('k', 'position', 'keys, turned (RoPE)', 'kₜ = RoPE(x·W_K, t) per KV head: pair i turned by t·θᵢ'),
      joinHeads(k),
    );
  }
  return attendProjected(rec, block.attn, q, k, v, { isCausal: true, attnBias: block.windowBias(T, T) });
}

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
      const rope = model.rope ? model.rope.tables(0, T) : null;
      if (rope) {
        // Rotary positions enter in every attention; their angles, cos then sin, as the blocks use them.
        rec.add(
          {
            id: 'pos',
            ...base,
            kind: 'position',
            title: 'rotary angles',
            formula:
              `cos(t·θᵢ), sin(t·θᵢ), θᵢ = ${c.rope?.base ?? 10000}^(−2i/${rope.cos.shape[1] * 2})` +
              (c.rope?.scaling && c.rope.scaling.type !== 'default' ? `, ${c.rope.scaling.type} rescaled` : ''),
          },
          F.cat([rope.cos, rope.sin], 1).reshape(1, T, rope.cos.shape[1] * 2),
        );
      } else {
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
      }
      let x = model.embed(input);
      if (!rope)
        rec.add({ id: 'input', ...base, kind: 'sum', title: 'embedding + position', formula: 'x₀ = wte + wpe' }, x);
      const rms = c.norm === 'rms';
      const normTitle = (hf: string, gpt2: string) => (rms ? `RMSNorm (${hf})` : `LayerNorm (${gpt2})`);
      const normFormula = (name: string) => (rms ? `x / √(mean(x²) + ε) · g (${name})` : `${name}(x)`);
      const grouped = (c.nKVHead ?? c.nHead) < c.nHead;
      let i = 0;
      for (const block of model.h) {
        const l = i++;
        const meta: BlockMeta = (id, kind, title, formula) => ({
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
        rec.add(meta('ln1', 'norm', normTitle('input_layernorm', 'ln_1'), normFormula('ln_1')), h);
        const r =
          rope || block.window !== null
            ? projectedAttention(rec, block, h, rope, meta)
            : attend(rec, block.attn, h, null, { isCausal: true });
        const a = block.residDropout.forward(r.output);
        const what = grouped ? 'grouped-query' : 'causal';
        const window = block.window !== null ? ` within ${block.window} positions` : '';
        rec.add(
          meta(
            'attn',
            'attention',
            `${what} self-attention`,
            `softmax(QKᵀ/√dₖ + mask${window})·V per head${grouped ? ' (V of its KV head)' : ''}, ·Wᴼ`,
          ),
          a,
          { keys: axis, causal: true, heads: r.heads, ...(grouped && { kvHeads: c.nKVHead }) },
        );
        x = F.add(x, a);
        rec.add(meta('add1', 'residual', 'x + attention', 'x + Attention(ln_1(x))'), x);
        const h2 = block.ln2.forward(x);
        rec.add(meta('ln2', 'norm', normTitle('post_attention_layernorm', 'ln_2'), normFormula('ln_2')), h2);
        let m: Tensor;
        if (c.mlp === 'swiglu') {
          // SwiGLU.forward: down_proj(swiglu(gate_proj(x), up_proj(x))); SiLU(gate) is drawn, not fed on.
          const mlp = block.mlp as SwiGLU;
          const gate = mlp.gateProj.forward(h2);
          const up = mlp.upProj.forward(h2);
          rec.add(meta('mlp.gate', 'ffn-hidden', 'MLP: SiLU(gate)', 'SiLU(x·W_gate)'), activate(gate, 'silu'));
          rec.add(meta('mlp.up', 'ffn-hidden', 'MLP: up', 'x·W_up'), up);
          const hidden = F.swiglu(gate, up);
          rec.add(meta('mlp.hidden', 'ffn-hidden', 'MLP: SiLU(gate) ⊙ up', 'SiLU(x·W_gate) ⊙ (x·W_up)'), hidden);
          m = mlp.downProj.forward(hidden);
          rec.add(meta('mlp.out', 'ffn-out', 'MLP: down', 'MLP(x) = hidden·W_down'), m);
        } else {
          const mlp = block.mlp as MLP;
          const act = mlp.activation;
          const hidden = F.gelu(mlp.fc.forward(h2), act === 'gelu_tanh' ? 'tanh' : 'none');
          rec.add(meta('mlp.hidden', 'ffn-hidden', `MLP: ${ACTIVATION_NAMES[act]}`, 'gelu(x·W_fc + b)'), hidden);
          m = mlp.dropout.forward(mlp.proj.forward(hidden));
          rec.add(meta('mlp.out', 'ffn-out', 'MLP: out', 'MLP(x) = hidden·W_proj + b'), m);
        }
        x = F.add(x, m);
        rec.add(meta('add2', 'residual', 'x + MLP', 'x + MLP(ln_2(x))'), x);
      }
      const hF = model.lnF.forward(x);
      rec.add(
        {
          id: 'ln_f',
          group: 'output',
          layer: null,
          axis,
          kind: 'norm',
          title: rms ? 'final RMSNorm (norm)' : 'final LayerNorm',
          formula: normFormula('ln_f'),
        },
        hF,
      );
      // model.head without ln_f: the tied table (float or quantized) or the untied lm_head.
      const out = model.lmHead ? model.lmHead.forward(hF) : model.wte.attend(hF);
      const formula = model.lmHead ? 'h · W_lm_headᵀ (its own head)' : 'h · Eᵀ (the tied embedding)';
      outputStages(rec, out, axis, top, (id) => label(id, axis), formula);
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
        dFF: c.dFf ?? 4 * c.nEmbd,
        vocabSize: c.vocabSize,
        norm: 'pre',
        ...((c.nKVHead ?? c.nHead) < c.nHead && { kvHeads: c.nKVHead }),
        ...(c.positions === 'rotary' && { family: 'llama' as const }),
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
