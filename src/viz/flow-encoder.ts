/**
 * The flow of a BERT-family encoder (BERT, DistilBERT, RoBERTa, XLM-R; models/encoder.ts): Encoder.forward composed
 * from the model's public modules, stage by stage (flow-core.ts says how, flow.ts is the entry): the word,
 * position (and token-type) embeddings, their sum through the embedding LayerNorm, each post-norm layer as
 * TransformerEncoderLayer runs it (self-attention over every token, the residual sum and LayerNorm, the
 * feed-forward block, its sum and LayerNorm), then a masked-LM head's transform, logits and softmax where the
 * folder has that head.
 */
import { noGrad } from '../autograd/grad-mode.ts';
import { positionIds, type Encoder } from '../models/encoder.ts';
import { withEvalMode } from '../nn/module.ts';
import * as F from '../ops/index.ts';
import { Tensor } from '../tensor/tensor.ts';
import {
  activate,
  checkOptions,
  idTensor,
  outputStages,
  Recorder,
  type FlowOptions,
  type FlowRun,
  type FlowStageKind,
} from './flow-core.ts';
import { ffnSubLayer, subLayers } from './flow-seq2seq.ts';

/**
 * The pass of an encoder's flow over one text's ids (special tokens included, no padding) and their token type ids,
 * its stages read by a recorder that reads at once or, `deferred`, when asked.
 */
export function recordEncoderFlow(
  model: Encoder,
  ids: readonly number[],
  typeIds: readonly number[],
  options: FlowOptions,
  deferred: boolean,
): { run: FlowRun; rec: Recorder } {
  const { dims, top, label } = checkOptions(options);
  const c = model.config;
  const input = idTensor(ids, 'the text');
  const T = ids.length;
  const rec = new Recorder(dims, deferred);
  const axis = 'tokens' as const;
  const emb = model.embeddings;
  const out = withEvalMode(model, () =>
    noGrad(() => {
      const base = { group: 'embedding', layer: null, axis };
      const positions = new Tensor(positionIds(ids, 1, T, c.positions, c.padId), [1, T], 'int32');
      const types = emb.tokenType ? new Tensor(Int32Array.from(typeIds), [1, T], 'int32') : null;
      const word = emb.word.forward(input);
      rec.add({ id: 'embed', ...base, kind: 'embedding', title: 'token embedding', formula: 'E[token]' }, word);
      if (emb.tokenType && types)
        rec.add(
          { id: 'type', ...base, kind: 'embedding', title: 'token type (segment)', formula: 'E_type[segment]' },
          emb.tokenType.forward(types),
        );
      rec.add(
        {
          id: 'pos',
          ...base,
          kind: 'position',
          title: 'position embedding',
          formula:
            c.positions === 'after-padding'
              ? 'E_pos[padding id + 1 + position] (learned)'
              : 'E_pos[position] (learned)',
        },
        emb.position.forward(positions),
      );
      // EncoderEmbeddings.forward: word (+ type) + position, then the LayerNorm (its dropout is off in eval).
      let x = emb.forward(input, types, positions);
      rec.add(
        {
          id: 'input',
          ...base,
          kind: 'norm',
          title: 'embeddings, LayerNorm',
          formula: emb.tokenType ? 'x₀ = LayerNorm(word + type + position)' : 'x₀ = LayerNorm(word + position)',
        },
        x,
      );
      [...model.encoder.layers].forEach((layer, i) => {
        const meta = (id: string, kind: FlowStageKind, title: string, formula: string) => ({
          id: `layer.${i}.${id}`,
          group: `layer ${i + 1}`,
          layer: i,
          kind,
          title,
          formula,
          axis,
        });
        x = subLayers(rec, layer, x, meta, [
          {
            name: 'attn',
            title: 'self-attention',
            mha: layer.selfAttn,
            memory: null,
            keys: axis,
            masks: { keyPaddingMask: null },
            drop: layer.dropout1,
          },
        ]);
        x = ffnSubLayer(rec, layer, x, meta, layer.norm2, layer.dropout2, 2);
      });
      const h = c.head;
      if (h.kind !== 'masked-lm') return null;
      // Encoder.maskedLM: dense → activation → LayerNorm, then the tied word table and the head's bias.
      const t = model.mlmNorm!.forward(activate(model.mlmDense!.forward(x), h.activation));
      rec.add(
        {
          id: 'mlm.transform',
          group: 'output',
          layer: null,
          axis,
          kind: 'norm',
          title: 'masked-LM transform',
          formula: `LayerNorm(${h.activation}(x·W + b))`,
        },
        t,
      );
      const logits = F.add(emb.word.attend(t), model.mlmBias!);
      outputStages(rec, logits, axis, top, (id) => label(id, axis));
      return logits;
    }),
  );
  const run: FlowRun = {
    flow: {
      model: 'encoder',
      config: {
        dModel: c.dModel,
        heads: c.nhead,
        layers: [c.numLayers],
        dFF: c.dimFeedforward,
        vocabSize: c.vocabSize,
        norm: 'post',
      },
      dims,
      axes: { tokens: { ids: [...ids], tokens: ids.map((id) => label(id, axis)) } },
      stages: rec.stages,
    },
    // The bare model or a classifier: no logits over the vocabulary (the last stage holds the states).
    logits: out ?? new Tensor(new Float32Array(0), [1, T, 0]),
    vectors: (id) => rec.vectors(id),
  };
  return { run, rec };
}
