/**
 * The flow of a Seq2Seq (qkv's translators, Hugging Face Marian): Seq2Seq.forward composed from the
 * model's public modules, stage by stage (flow-core.ts says how, flow.ts is the entry).
 */
import { noGrad } from '../autograd/grad-mode.ts';
import type { Seq2Seq } from '../models/seq2seq.ts';
import type { MultiheadAttention } from '../nn/attention.ts';
import { withEvalMode } from '../nn/module.ts';
import { causalBias } from '../ops/attention.ts';
import * as F from '../ops/index.ts';
import type { Tensor } from '../tensor/tensor.ts';
import {
  ACTIVATION_NAMES,
  activate,
  attend,
  checkOptions,
  idTensor,
  outputStages,
  Recorder,
  type AttendMasks,
  type FlowAxis,
  type FlowOptions,
  type FlowRun,
  type FlowStage,
  type FlowStageKind,
} from './flow-core.ts';

/**
 * The flow of a Seq2Seq over source ids and the decoder's input ids (the start id first, then the
 * target prefix): row t of the decoder predicts the token after target input t.
 */
export function seq2seqFlow(
  model: Seq2Seq,
  srcIds: readonly number[],
  tgtIds: readonly number[],
  options: FlowOptions = {},
): FlowRun {
  return recordSeq2seqFlow(model, srcIds, tgtIds, options, false).run;
}

/** {@link seq2seqFlow} on every device: the stages' numbers read back asynchronously after the pass. */
export async function seq2seqFlowAsync(
  model: Seq2Seq,
  srcIds: readonly number[],
  tgtIds: readonly number[],
  options: FlowOptions = {},
): Promise<FlowRun> {
  const { run, rec } = recordSeq2seqFlow(model, srcIds, tgtIds, options, true);
  await rec.readAll();
  return run;
}

/** The pass of seq2seqFlow, its stages read by a recorder that reads at once or, `deferred`, when asked. */
export function recordSeq2seqFlow(
  model: Seq2Seq,
  srcIds: readonly number[],
  tgtIds: readonly number[],
  options: FlowOptions,
  deferred: boolean,
): { run: FlowRun; rec: Recorder } {
  const { dims, top, label } = checkOptions(options);
  const c = model.config;
  const rec = new Recorder(dims, deferred);
  const src = idTensor(srcIds, 'the source');
  const tgt = idTensor(tgtIds, 'the target input');
  const logits = withEvalMode(model, () =>
    noGrad(() => {
      const srcPadding = model.paddingMask(src);
      const scale = (c.scaleEmbedding ?? true) ? Math.sqrt(c.dModel) : 1;
      const embedding = (ids: Tensor, side: 'src' | 'tgt', axis: FlowAxis, group: string) => {
        const table = side === 'tgt' && model.tgtEmbedding ? model.tgtEmbedding : model.embedding;
        const e = table.forward(ids);
        const T = ids.shape[1];
        rec.add(
          {
            id: `${side}.embed`,
            group,
            layer: null,
            kind: 'embedding',
            title: 'token embedding',
            formula: scale !== 1 ? `E[token] · √dModel (× ${scale.toPrecision(4)})` : 'E[token]',
            axis,
          },
          scale !== 1 ? F.mul(e, scale) : e,
        );
        rec.add(
          {
            id: `${side}.pos`,
            group,
            layer: null,
            kind: 'position',
            title: 'positional encoding',
            formula: 'PE(pos, 2i) = sin(pos/10000^(2i/d)), PE(pos, 2i+1) = cos(…)',
            axis,
          },
          F.narrow(model.positions.pe, 0, 0, T).reshape(1, T, c.dModel),
        );
        const x = model.embed(ids, 0, side);
        rec.add(
          { id: `${side}.input`, group, layer: null, kind: 'sum', title: 'embedding + position', formula: 'x₀', axis },
          x,
        );
        return x;
      };

      // Encoder (Seq2Seq.encode): its layers as TransformerEncoderLayer.forward runs them.
      let x = embedding(src, 'src', 'source', 'embedding (source)');
      const enc = model.transformer.encoder;
      [...enc.layers].forEach((layer, i) => {
        const group = `encoder layer ${i + 1}`;
        const meta = (id: string, kind: FlowStageKind, title: string, formula: string) => ({
          id: `enc.${i}.${id}`,
          group,
          layer: i,
          kind,
          title,
          formula,
          axis: 'source' as const,
        });
        const masks = { keyPaddingMask: srcPadding };
        x = subLayers(rec, layer, x, meta, [
          {
            name: 'attn',
            title: 'self-attention',
            mha: layer.selfAttn,
            memory: null,
            keys: 'source',
            masks,
            drop: layer.dropout1,
          },
        ]);
        x = ffnSubLayer(rec, layer, x, meta, layer.norm2, layer.dropout2, 2);
      });
      if (enc.norm) {
        x = enc.norm.forward(x);
        const n = { group: 'encoder output', layer: null, kind: 'norm' as const, axis: 'source' as const };
        rec.add({ id: 'enc.norm', ...n, title: 'final LayerNorm', formula: 'memory = LayerNorm(x)' }, x);
      }
      const memory = x;

      // Decoder (Seq2Seq.decode): a causal mask, the target's padding as keys, the source's in cross-attention.
      const T = tgt.shape[1];
      const tgtMask = causalBias(T, T);
      const tgtPadding = (c.maskTargetPadding ?? true) ? model.paddingMask(tgt) : null;
      let y = embedding(tgt, 'tgt', 'target', 'embedding (target)');
      const dec = model.transformer.decoder;
      [...dec.layers].forEach((layer, i) => {
        const group = `decoder layer ${i + 1}`;
        const meta = (id: string, kind: FlowStageKind, title: string, formula: string) => ({
          id: `dec.${i}.${id}`,
          group,
          layer: i,
          kind,
          title,
          formula,
          axis: 'target' as const,
        });
        y = subLayers(rec, layer, y, meta, [
          {
            name: 'attn',
            title: 'masked self-attention',
            mha: layer.selfAttn,
            memory: null,
            keys: 'target',
            masks: { attnMask: tgtMask, keyPaddingMask: tgtPadding },
            drop: layer.dropout1,
            causal: true,
          },
          {
            name: 'cross',
            title: 'cross-attention',
            mha: layer.multiheadAttn,
            memory,
            keys: 'source',
            masks: { keyPaddingMask: srcPadding },
            drop: layer.dropout2,
          },
        ]);
        y = ffnSubLayer(rec, layer, y, meta, layer.norm3, layer.dropout3, 3);
      });
      if (dec.norm) {
        y = dec.norm.forward(y);
        const n = { group: 'output', layer: null, kind: 'norm' as const, axis: 'target' as const };
        rec.add({ id: 'dec.norm', ...n, title: 'final LayerNorm', formula: 'h = LayerNorm(x)' }, y);
      }
      const out = model.generator(y);
      outputStages(rec, out, 'target', top, (id) => label(id, 'target'));
      return out;
    }),
  );
  const run: FlowRun = {
    flow: {
      model: 'seq2seq',
      config: {
        dModel: c.dModel,
        heads: c.nhead,
        layers: [c.numEncoderLayers, c.numDecoderLayers],
        dFF: c.dimFeedforward,
        vocabSize: model.targetVocabSize,
        norm: c.normFirst ? 'pre' : 'post',
      },
      dims,
      axes: {
        source: { ids: [...srcIds], tokens: srcIds.map((id) => label(id, 'source')) },
        target: { ids: [...tgtIds], tokens: tgtIds.map((id) => label(id, 'target')) },
      },
      stages: rec.stages,
    },
    logits,
    vectors: (id) => rec.vectors(id),
  };
  return { run, rec };
}

export type MetaOf = (
  id: string,
  kind: FlowStageKind,
  title: string,
  formula: string,
) => Omit<FlowStage, 'rows' | 'width' | 'keys' | 'causal' | 'heads' | 'top'>;

/** A module with a one-tensor forward (a Linear, a LayerNorm, a Dropout). */
type Module1 = { forward(x: Tensor): Tensor };

/** The parts of an encoder or decoder layer the flow reads (nn/transformer.ts's public modules). */
interface LayerParts {
  options: { normFirst: boolean; activation: 'relu' | 'gelu' | 'silu' };
  linear1: Module1;
  linear2: Module1;
  dropout: Module1;
  norm1: Module1;
  norm2: Module1;
}

/** An attention sub-layer of a Seq2Seq layer. */
interface AttentionPart {
  name: string;
  title: string;
  mha: MultiheadAttention;
  memory: Tensor | null;
  /** Whose tokens the keys are. */
  keys: FlowAxis;
  masks: AttendMasks;
  drop: Module1;
  causal?: boolean;
}

/**
 * The attention sub-layers of a Seq2Seq layer, in order, each residual with its norm (norm1, norm2):
 * post-norm LayerNorm(x + Drop(Attn(x))), or pre-norm x + Drop(Attn(LayerNorm(x))).
 */
export function subLayers(rec: Recorder, layer: LayerParts, x: Tensor, meta: MetaOf, parts: AttentionPart[]): Tensor {
  parts.forEach((p, n) => {
    const norm = n === 0 ? layer.norm1 : layer.norm2;
    const k = n + 1;
    const what = p.memory ? 'Attention(x, memory)' : 'Attention(x)';
    const attnStage = (input: Tensor) => {
      const r = attend(rec, p.mha, input, p.memory, p.masks);
      const out = p.drop.forward(r.output);
      rec.add(meta(p.name, 'attention', p.title, 'softmax(QKᵀ/√dₖ + mask)·V per head, joined, ·Wᴼ'), out, {
        keys: p.keys,
        causal: p.causal ?? false,
        heads: r.heads,
      });
      return out;
    };
    if (layer.options.normFirst) {
      const h = norm.forward(x);
      rec.add(meta(`norm${k}`, 'norm', 'LayerNorm', 'LayerNorm(x)'), h);
      x = F.add(x, attnStage(h));
      rec.add(meta(`add${k}`, 'residual', `x + ${p.title}`, `x + ${what}`), x);
    } else {
      x = F.add(x, attnStage(x));
      rec.add(meta(`add${k}`, 'residual', `x + ${p.title}`, `x + ${what}`), x);
      x = norm.forward(x);
      rec.add(meta(`norm${k}`, 'norm', 'LayerNorm', `LayerNorm(x + ${what})`), x);
    }
  });
  return x;
}

/** The feed-forward sub-layer (the layer's k-th, with its norm and residual dropout), as its ffBlock runs it. */
export function ffnSubLayer(
  rec: Recorder,
  layer: LayerParts,
  x: Tensor,
  meta: MetaOf,
  norm: Module1,
  drop: Module1,
  k: 2 | 3,
): Tensor {
  const act = layer.options.activation;
  const ffn = (input: Tensor) => {
    const hidden = activate(layer.linear1.forward(input), act);
    rec.add(meta('ffn.hidden', 'ffn-hidden', `feed-forward: ${ACTIVATION_NAMES[act]}`, `${act}(x·W₁ + b₁)`), hidden);
    const out = drop.forward(layer.linear2.forward(layer.dropout.forward(hidden)));
    rec.add(meta('ffn.out', 'ffn-out', 'feed-forward: out', 'FFN(x) = hidden·W₂ + b₂'), out);
    return out;
  };
  if (layer.options.normFirst) {
    const h = norm.forward(x);
    rec.add(meta(`norm${k}`, 'norm', 'LayerNorm', 'LayerNorm(x)'), h);
    x = F.add(x, ffn(h));
    rec.add(meta(`add${k}`, 'residual', 'x + feed-forward', 'x + FFN(x)'), x);
  } else {
    x = F.add(x, ffn(x));
    rec.add(meta(`add${k}`, 'residual', 'x + feed-forward', 'x + FFN(x)'), x);
    x = norm.forward(x);
    rec.add(meta(`norm${k}`, 'norm', 'LayerNorm', 'LayerNorm(x + FFN(x))'), x);
  }
  return x;
}
