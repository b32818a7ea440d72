/**
 * Hugging Face BERT, RoBERTa, XLM-R and DistilBERT checkpoints onto qkv's own Encoder (models/encoder.ts): a
 * config reader and a mapping of names, not a second model. The four are one network with switches:
 *
 *   model_type    token types   positions            ε (default)   classifier first layer
 *   bert          yes           0..T−1               1e-12         pooler.dense, tanh
 *   roberta       yes (1 row)   after the pad id     1e-12 (file)  classifier.dense, tanh
 *   xlm-roberta   as roberta
 *   distilbert    none          0..T−1               1e-12 fixed   pre_classifier, ReLU
 *
 *   HF (prefix bert. / roberta. / distilbert. optional)   qkv (Encoder state dict)
 *   embeddings.{word,position,token_type}_embeddings.weight  embeddings.{word,position,tokenType}.weight
 *   embeddings.LayerNorm.*                                   embeddings.norm.*
 *   encoder.layer.i.attention.self.{query,key,value}.*       encoder.layers.i.self_attn.in_proj_* ([q; k; v])
 *     (distilbert: transformer.layer.i.attention.{q,k,v}_lin.*)
 *   …attention.output.dense.* (out_lin)                      encoder.layers.i.self_attn.out_proj.*
 *   …attention.output.LayerNorm.* (sa_layer_norm)            encoder.layers.i.norm1.*
 *   …intermediate.dense.* (ffn.lin1)                         encoder.layers.i.linear1.*
 *   …output.dense.* (ffn.lin2)                               encoder.layers.i.linear2.*
 *   …output.LayerNorm.* (output_layer_norm)                  encoder.layers.i.norm2.*
 *   pooler.dense.*                                           pooler.* (bare model) / classifierDense.* (bert cls)
 *   cls.predictions.transform.dense / lm_head.dense / vocab_transform          mlmDense.*
 *   cls.predictions.transform.LayerNorm / lm_head.layer_norm / vocab_layer_norm mlmNorm.*
 *   cls.predictions.bias / lm_head.bias / vocab_projector.bias                  mlmBias
 *   cls.predictions.decoder.weight / lm_head.decoder.weight / vocab_projector.weight  = the word table (checked)
 *   classifier.{dense,out_proj} (roberta) / pre_classifier, classifier (distilbert) / classifier (bert)
 *                                                            classifierDense.*, classifierOut.*
 *
 * Old checkpoints' LayerNorm `gamma`/`beta` are read as `weight`/`bias` (as transformers renames them). The
 * tensors of heads other than the one built (another head's, the NSP head, the position_ids buffer) are left
 * unread, as transformers' AutoModel leaves them; any other tensor is refused, naming it.
 */
import type { MultiheadAttention } from '../../nn/attention.ts';
import type { Linear } from '../../nn/layers.ts';
import type { Module } from '../../nn/module.ts';
import type { Activation } from '../../nn/transformer.ts';
import { shapeToString } from '../../tensor/shape.ts';
import { Tensor } from '../../tensor/tensor.ts';
import type { LinearSite, SavedModule } from './peft.ts';
import type { EncoderConfig, EncoderHead, PoolActivation } from '../encoder.ts';
import { fused, sameValues } from './tensors.ts';

/** The Hugging Face model_types of the encoder family. */
export type EncoderFamily = 'bert' | 'roberta' | 'xlm-roberta' | 'distilbert';

/** The model_types this file reads. */
export const ENCODER_FAMILIES: readonly EncoderFamily[] = ['bert', 'roberta', 'xlm-roberta', 'distilbert'];

/** Which head to build: as config.json's `architectures` says ('auto'), or one asked for. */
export type HeadKind = 'auto' | 'none' | 'masked-lm' | 'classification';

/** How a classifier's logits become scores: transformers' problem_type. */
export type ProblemType = 'single_label_classification' | 'multi_label_classification' | 'regression';

/** What an encoder folder's config.json says, in qkv's terms. */
export interface HfEncoderConfig {
  /** config.json's model_type. */
  family: EncoderFamily;
  /** qkv's Encoder config (its head as asked, or as `architectures` says). */
  model: EncoderConfig;
  /** id2label in id order (classification; else the labels config.json has, or LABEL_i). */
  labels: string[];
  /** transformers' problem_type (absent: multi-label never; one label is regression, else single-label). */
  problemType: ProblemType;
  /** The longest input in tokens, special tokens included (max_position_embeddings, less RoBERTa's offset). */
  maxTokens: number;
}

/** HF's ACT2FN names the encoder's feed-forward block has. */
const ACTIVATIONS: Record<string, Activation> = { gelu: 'gelu', relu: 'relu', silu: 'silu', swish: 'silu' };

const HEAD_SUFFIXES: [string, Exclude<HeadKind, 'auto'>][] = [
  ['ForMaskedLM', 'masked-lm'],
  ['ForSequenceClassification', 'classification'],
  ['Model', 'none'],
];

function fail(msg: string): never {
  throw new Error(`config.json: ${msg}`);
}

function positiveInt(c: Record<string, unknown>, k: string, fallback?: number): number {
  const v = c[k] ?? fallback;
  if (!Number.isInteger(v) || (v as number) <= 0) fail(`${k} must be a positive integer, got ${JSON.stringify(c[k])}`);
  return v as number;
}

function activation(c: Record<string, unknown>, k: string): Activation {
  const a = c[k] ?? 'gelu';
  const out = typeof a === 'string' && Object.hasOwn(ACTIVATIONS, a) ? ACTIVATIONS[a] : undefined;
  if (!out) fail(`${k} ${JSON.stringify(a)} is not supported (expected one of ${Object.keys(ACTIVATIONS).join(', ')})`);
  return out;
}

/** The head `architectures[0]` names (BertForMaskedLM → 'masked-lm'), or 'none' where it names none qkv builds. */
export function headOfArchitectures(c: Record<string, unknown>): Exclude<HeadKind, 'auto'> {
  const arch = Array.isArray(c.architectures) ? c.architectures[0] : undefined;
  if (typeof arch === 'string') for (const [suffix, kind] of HEAD_SUFFIXES) if (arch.endsWith(suffix)) return kind;
  return 'none';
}

/** id2label in id order, checked: ids 0..n−1 each once. */
function labelsOf(c: Record<string, unknown>, n: number): string[] {
  const map = c.id2label;
  if (map === undefined || map === null) return Array.from({ length: n }, (_, i) => `LABEL_${i}`);
  if (typeof map !== 'object' || Array.isArray(map))
    fail(`id2label must be an object of id: label, got ${JSON.stringify(map)}`);
  const labels = new Array<string>(n);
  for (const [k, v] of Object.entries(map)) {
    const i = Number(k);
    if (!Number.isInteger(i) || i < 0 || i >= n || typeof v !== 'string' || labels[i] !== undefined)
      fail(`id2label must map each id 0..${n - 1} to a label once, got ${JSON.stringify(map)}`);
    labels[i] = v;
  }
  if (labels.some((l) => l === undefined)) fail(`id2label must name every id 0..${n - 1}, got ${JSON.stringify(map)}`);
  return labels;
}

/**
 * qkv's Encoder config of an HF BERT / RoBERTa / XLM-R / DistilBERT config.json, with the head asked for ('auto':
 * the one `architectures` names), or one line naming the key that does not fit. The bare model's pooler is set
 * by {@link encoderStateDict}'s caller from the weights (a checkpoint may have none).
 */
export function encoderConfigFromHf(json: unknown, head: HeadKind = 'auto'): HfEncoderConfig {
  if (json === null || typeof json !== 'object' || Array.isArray(json))
    fail(`expected a JSON object, got ${json === null ? 'null' : typeof json}`);
  const c = json as Record<string, unknown>;
  const family = c.model_type as EncoderFamily;
  if (!ENCODER_FAMILIES.includes(family))
    fail(`model_type ${JSON.stringify(c.model_type)} is not one of ${ENCODER_FAMILIES.join(', ')}`);
  const distil = family === 'distilbert';
  const V = positiveInt(c, 'vocab_size');
  const d = positiveInt(c, distil ? 'dim' : 'hidden_size');
  const heads = positiveInt(c, distil ? 'n_heads' : 'num_attention_heads');
  if (d % heads !== 0) fail(`${distil ? 'dim' : 'hidden_size'} ${d} is not divisible by ${heads} heads`);
  for (const [k, ok] of [
    ['is_decoder', false],
    ['add_cross_attention', false],
  ] as const) {
    if (c[k] !== undefined && c[k] !== ok) fail(`${k} ${JSON.stringify(c[k])} is not supported (qkv reads encoders)`);
  }
  const pet = c.position_embedding_type;
  if (pet !== undefined && pet !== null && pet !== 'absolute')
    fail(`position_embedding_type ${JSON.stringify(pet)} is not supported (qkv reads 'absolute' positions)`);
  const eps = distil ? 1e-12 : (c.layer_norm_eps ?? 1e-12);
  if (typeof eps !== 'number' || !(eps > 0)) fail(`layer_norm_eps must be a number > 0, got ${JSON.stringify(eps)}`);
  const padId = c.pad_token_id ?? (family === 'bert' || distil ? 0 : 1);
  if (!Number.isInteger(padId) || (padId as number) < 0 || (padId as number) >= V)
    fail(`pad_token_id must be an id in [0, ${V}), got ${JSON.stringify(c.pad_token_id)}`);
  const maxPositions = positiveInt(c, 'max_position_embeddings');
  const positions = family === 'roberta' || family === 'xlm-roberta' ? 'after-padding' : 'absolute';
  const act = activation(c, distil ? 'activation' : 'hidden_act');
  const numLabels = c.num_labels ?? (c.id2label && typeof c.id2label === 'object' ? Object.keys(c.id2label).length : 2);
  if (!Number.isInteger(numLabels) || (numLabels as number) < 1)
    fail(`num_labels must be a positive integer, got ${JSON.stringify(numLabels)}`);
  const labels = labelsOf(c, numLabels as number);
  const pt = c.problem_type ?? null;
  if (pt !== null && pt !== 'single_label_classification' && pt !== 'multi_label_classification' && pt !== 'regression')
    fail(
      `problem_type ${JSON.stringify(pt)} is not one of single_label_classification, ` +
        'multi_label_classification, regression',
    );
  const problemType: ProblemType = pt ?? (labels.length === 1 ? 'regression' : 'single_label_classification');
  const kind = head === 'auto' ? headOfArchitectures(c) : head;
  let h: EncoderHead;
  if (kind === 'masked-lm') {
    h = { kind, activation: distil ? act : family === 'bert' ? act : 'gelu', layerNormEps: eps };
  } else if (kind === 'classification') {
    h = { kind, numLabels: labels.length, activation: (distil ? 'relu' : 'tanh') as PoolActivation };
  } else {
    h = { kind: 'none', pooler: false };
  }
  const model: EncoderConfig = {
    vocabSize: V,
    dModel: d,
    nhead: heads,
    numLayers: positiveInt(c, distil ? 'n_layers' : 'num_hidden_layers'),
    dimFeedforward: positiveInt(c, distil ? 'hidden_dim' : 'intermediate_size'),
    activation: act,
    layerNormEps: eps,
    maxPositions,
    typeVocabSize: distil ? 0 : positiveInt(c, 'type_vocab_size', 2),
    padId: padId as number,
    positions,
    dropout: 0, // inference: transformers' dropouts only matter when training
    head: h,
  };
  const maxTokens = positions === 'after-padding' ? maxPositions - (padId as number) - 1 : maxPositions;
  if (maxTokens < 1)
    fail(`max_position_embeddings ${maxPositions} leaves no position after pad_token_id ${String(padId)}`);
  return { family, model, labels, problemType, maxTokens };
}

/** HF's per-family names of the parts the key map reads. */
interface Names {
  /** The base model's prefix (base_model_prefix). */
  prefix: string;
  /** The layers' path. */
  layers: string;
  /** q, k, v, out, norm1, ff1, ff2, norm2 within a layer. */
  layer: [string, string, string, string, string, string, string, string];
  /** The masked-LM head: dense, LayerNorm, bias, decoder weight, decoder bias. */
  mlm: [string, string, string, string, string];
  /** The classifier: first layer, projection. */
  cls: [string, string];
  /** Tensors of other heads and buffers, left unread (prefixes). */
  ignored: string[];
}

const BERT_LAYER: Names['layer'] = [
  'attention.self.query',
  'attention.self.key',
  'attention.self.value',
  'attention.output.dense',
  'attention.output.LayerNorm',
  'intermediate.dense',
  'output.dense',
  'output.LayerNorm',
];

const NAMES: Record<EncoderFamily, Names> = {
  bert: {
    prefix: 'bert.',
    layers: 'encoder.layer',
    layer: BERT_LAYER,
    mlm: [
      'cls.predictions.transform.dense',
      'cls.predictions.transform.LayerNorm',
      'cls.predictions.bias',
      'cls.predictions.decoder.weight',
      'cls.predictions.decoder.bias',
    ],
    cls: ['pooler.dense', 'classifier'],
    ignored: ['cls.', 'classifier.', 'pooler.', 'embeddings.position_ids'],
  },
  roberta: {
    prefix: 'roberta.',
    layers: 'encoder.layer',
    layer: BERT_LAYER,
    mlm: ['lm_head.dense', 'lm_head.layer_norm', 'lm_head.bias', 'lm_head.decoder.weight', 'lm_head.decoder.bias'],
    cls: ['classifier.dense', 'classifier.out_proj'],
    ignored: ['lm_head.', 'classifier.', 'pooler.', 'embeddings.position_ids'],
  },
  'xlm-roberta': null as unknown as Names, // as roberta (set below)
  distilbert: {
    prefix: 'distilbert.',
    layers: 'transformer.layer',
    layer: [
      'attention.q_lin',
      'attention.k_lin',
      'attention.v_lin',
      'attention.out_lin',
      'sa_layer_norm',
      'ffn.lin1',
      'ffn.lin2',
      'output_layer_norm',
    ],
    mlm: ['vocab_transform', 'vocab_layer_norm', 'vocab_projector.bias', 'vocab_projector.weight', ''],
    cls: ['pre_classifier', 'classifier'],
    ignored: ['vocab_', 'pre_classifier.', 'classifier.', 'embeddings.position_ids'],
  },
};
NAMES['xlm-roberta'] = NAMES.roberta;

/** Whether the checkpoint's tensors hold a bare model's pooler (BertModel, RobertaModel; DistilBERT has none). */
export function hasPooler(tensorNames: Iterable<string>, family: EncoderFamily): boolean {
  if (family === 'distilbert') return false;
  for (const n of tensorNames)
    if (n === 'pooler.dense.weight' || n === `${NAMES[family].prefix}pooler.dense.weight`) return true;
  return false;
}

/**
 * qkv's Encoder state dict from an HF checkpoint's tensors (names with or without the base model's prefix): q/k/v
 * fused, the tied output projection checked against the word table. An Error names the first tensor that is
 * missing, of the wrong shape, unexpected, or differs from what it must equal.
 */
export function encoderStateDict(
  tensors: Record<string, Tensor>,
  family: EncoderFamily,
  config: EncoderConfig,
): Record<string, Tensor> {
  const n = NAMES[family];
  const byName = new Map<string, Tensor>();
  const original = new Map<string, string>();
  for (const [k, t] of Object.entries(tensors)) {
    // Old checkpoints: LayerNorm.gamma / .beta (transformers renames them the same way).
    let name = k.replace(/\.gamma$/, '.weight').replace(/\.beta$/, '.bias');
    if (name.startsWith(n.prefix)) name = name.slice(n.prefix.length);
    if (name === 'embeddings.position_ids') continue;
    if (t.dtype !== 'float32') throw new Error(`${k}: expected floating-point values, got ${t.dtype}`);
    byName.set(name, t);
    original.set(name, k);
  }
  const used = new Set<string>();
  // A missing tensor is named as the file would name it: the base model's under its prefix where the file uses one.
  const prefixed = [...original.values()].some((k) => k.startsWith(n.prefix));
  const base = /^(embeddings|encoder|transformer|pooler)\./;
  const nameOf = (name: string) => original.get(name) ?? (prefixed && base.test(name) ? n.prefix : '') + name;
  const take = (name: string, shape: number[]): Tensor => {
    const t = byName.get(name);
    if (!t) throw new Error(`missing tensor ${nameOf(name)}`);
    if (shapeToString(t.shape) !== shapeToString(shape))
      throw new Error(`${nameOf(name)}: expected shape ${shapeToString(shape)}, got ${shapeToString(t.shape)}`);
    used.add(name);
    return t;
  };
  const { vocabSize: V, dModel: E, dimFeedforward: Ff, maxPositions: P, typeVocabSize } = config;
  const out: Record<string, Tensor> = {};
  const linear = (to: string, from: string, rows: number, cols: number) => {
    out[`${to}.weight`] = take(`${from}.weight`, [rows, cols]);
    out[`${to}.bias`] = take(`${from}.bias`, [rows]);
  };
  const norm = (to: string, from: string) => {
    out[`${to}.weight`] = take(`${from}.weight`, [E]);
    out[`${to}.bias`] = take(`${from}.bias`, [E]);
  };
  const word = take('embeddings.word_embeddings.weight', [V, E]);
  out['embeddings.word.weight'] = word;
  out['embeddings.position.weight'] = take('embeddings.position_embeddings.weight', [P, E]);
  if (typeVocabSize > 0)
    out['embeddings.tokenType.weight'] = take('embeddings.token_type_embeddings.weight', [typeVocabSize, E]);
  norm('embeddings.norm', 'embeddings.LayerNorm');
  const [q, k, v, o, n1, f1, f2, n2] = n.layer;
  for (let i = 0; i < config.numLayers; i++) {
    const hf = `${n.layers}.${i}`;
    const qkv = `encoder.layers.${i}`;
    out[`${qkv}.self_attn.in_proj_weight`] = fused([q, k, v].map((p) => take(`${hf}.${p}.weight`, [E, E])));
    out[`${qkv}.self_attn.in_proj_bias`] = fused([q, k, v].map((p) => take(`${hf}.${p}.bias`, [E])));
    linear(`${qkv}.self_attn.out_proj`, `${hf}.${o}`, E, E);
    norm(`${qkv}.norm1`, `${hf}.${n1}`);
    linear(`${qkv}.linear1`, `${hf}.${f1}`, Ff, E);
    linear(`${qkv}.linear2`, `${hf}.${f2}`, E, Ff);
    norm(`${qkv}.norm2`, `${hf}.${n2}`);
  }
  const head = config.head;
  if (head.kind === 'none' && head.pooler) linear('pooler', 'pooler.dense', E, E);
  if (head.kind === 'masked-lm') {
    const [dense, ln, bias, decoder, decoderBias] = n.mlm;
    linear('mlmDense', dense, E, E);
    norm('mlmNorm', ln);
    out.mlmBias = take(bias, [V]);
    // The decoder is tied to the word table (save_pretrained may drop the copy); its bias is mlmBias again.
    for (const [name, equal, shape] of [
      [decoder, word, [V, E]],
      [decoderBias, out.mlmBias, [V]],
    ] as const) {
      if (name === '' || !byName.has(name)) continue;
      const tiedTo = name === decoder ? nameOf('embeddings.word_embeddings.weight') : nameOf(bias);
      if (!sameValues(take(name, [...shape]), equal))
        throw new Error(`${nameOf(name)} differs from ${tiedTo}: qkv ties them`);
    }
  }
  if (head.kind === 'classification') {
    linear('classifierDense', n.cls[0], E, E);
    linear('classifierOut', n.cls[1], head.numLabels, E);
  }
  for (const name of byName.keys()) {
    if (used.has(name) || n.ignored.some((p) => name.startsWith(p))) continue;
    throw new Error(`unexpected tensor ${nameOf(name)} (not part of a ${family} model qkv reads)`);
  }
  return out;
}

// ---- Fine-tuning: the linear layers PEFT adapts, and the weights under Hugging Face's names ----------------------

/** A submodule of `model` by its qkv path (`encoder.layers.0.self_attn`). */
function moduleAt<M>(model: Module, path: string): M {
  const m = model.namedModules().find(([n]) => n === path);
  if (!m) throw new Error(`internal: no module '${path}' in the Encoder`);
  return m[1] as M;
}

/** The Hugging Face path of a classifier's layer: BERT's first is the base model's pooler (`bert.pooler.dense`). */
function clsPath(n: Names, name: string): string {
  return name.startsWith('pooler.') ? `${n.prefix}${name}` : name;
}

/**
 * *ForSequenceClassification's linear layers by their module paths, as PEFT matches target_modules against them
 * (PEFT's default for bert and roberta: query, value; for distilbert: q_lin, v_lin), on qkv's layers: q/k/v are
 * rows of the packed in_proj, the rest nn.Linear. The head's two layers are sites too (BERT's `bert.pooler.dense`
 * and `classifier`, RoBERTa's `classifier.dense` and `classifier.out_proj`, DistilBERT's `pre_classifier` and
 * `classifier`): PEFT's name matching reaches them ('dense' names the first in BERT and RoBERTa), and its
 * all-linear takes them both in a model without a task type.
 */
export function encoderLinearSites(
  model: Module & { readonly config: EncoderConfig },
  family: EncoderFamily,
): LinearSite[] {
  const n = NAMES[family];
  const c = model.config;
  if (c.head.kind !== 'classification')
    throw new Error(`internal: encoderLinearSites takes a classifier, this Encoder's head is '${c.head.kind}'`);
  const [q, k, v, o, , f1, f2] = n.layer;
  const linear = (path: string, l: Linear): LinearSite => ({
    path,
    layer: { linear: l },
    inFeatures: l.inFeatures,
    outFeatures: l.outFeatures,
    conv1d: false,
  });
  const sites: LinearSite[] = [];
  for (let i = 0; i < c.numLayers; i++) {
    const hf = `${n.prefix}${n.layers}.${i}`;
    const own = `encoder.layers.${i}`;
    const attention = moduleAt<MultiheadAttention>(model, `${own}.self_attn`);
    for (const [name, part] of [
      [q, 'q'],
      [k, 'k'],
      [v, 'v'],
    ] as const)
      sites.push({
        path: `${hf}.${name}`,
        layer: { attention, part },
        inFeatures: c.dModel,
        outFeatures: c.dModel,
        conv1d: false,
      });
    sites.push(linear(`${hf}.${o}`, moduleAt<Linear>(model, `${own}.self_attn.out_proj`)));
    sites.push(linear(`${hf}.${f1}`, moduleAt<Linear>(model, `${own}.linear1`)));
    sites.push(linear(`${hf}.${f2}`, moduleAt<Linear>(model, `${own}.linear2`)));
  }
  sites.push(linear(clsPath(n, n.cls[0]), moduleAt<Linear>(model, 'classifierDense')));
  sites.push(linear(clsPath(n, n.cls[1]), moduleAt<Linear>(model, 'classifierOut')));
  return sites;
}

/**
 * The head's layers as modules_to_save may train them in full (PEFT's SEQ_CLS names 'classifier' and 'score'): BERT's
 * `classifier` and `bert.pooler.dense`, RoBERTa's `classifier` (its dense and out_proj), DistilBERT's `classifier` and
 * `pre_classifier`.
 */
export function encoderSavedModules(
  model: Module & { readonly config: EncoderConfig },
  family: EncoderFamily,
): SavedModule[] {
  const dense = moduleAt<Linear>(model, 'classifierDense');
  const out = moduleAt<Linear>(model, 'classifierOut');
  const params = (l: Linear, prefix = ''): [string, Tensor][] => [
    [`${prefix}weight`, l.weight],
    [`${prefix}bias`, l.bias!],
  ];
  if (family === 'roberta' || family === 'xlm-roberta')
    return [{ path: 'classifier', params: [...params(dense, 'dense.'), ...params(out, 'out_proj.')] }];
  const n = NAMES[family];
  return [
    { path: clsPath(n, n.cls[0]), params: params(dense) },
    { path: clsPath(n, n.cls[1]), params: params(out) },
  ];
}

/**
 * A classifier Encoder's state dict (qkv's names: `model.stateDict()`, or any tensors by those names, such as
 * gradients) under *ForSequenceClassification's names, as save_pretrained writes them: the base model's under its
 * prefix (`bert.`, `roberta.`, `distilbert.`), q/k/v split out of the packed in_proj, the head's as the family names
 * it. New tensors, not the given ones.
 */
export function encoderHfStateDict(
  own: Record<string, Tensor>,
  family: EncoderFamily,
  config: EncoderConfig,
): Record<string, Tensor> {
  const n = NAMES[family];
  const E = config.dModel;
  const [q, k, v, o, n1, f1, f2, n2] = n.layer;
  const map: Record<string, string> = {
    'embeddings.word': `${n.prefix}embeddings.word_embeddings`,
    'embeddings.position': `${n.prefix}embeddings.position_embeddings`,
    'embeddings.tokenType': `${n.prefix}embeddings.token_type_embeddings`,
    'embeddings.norm': `${n.prefix}embeddings.LayerNorm`,
    classifierDense: clsPath(n, n.cls[0]),
    classifierOut: clsPath(n, n.cls[1]),
  };
  const out: Record<string, Tensor> = {};
  for (const [name, t] of Object.entries(own)) {
    const m = /^(.+)\.(weight|bias)$/.exec(name);
    const layer = /^encoder\.layers\.(\d+)\.(.+)$/.exec(m?.[1] ?? '');
    const packed = /^encoder\.layers\.(\d+)\.self_attn\.in_proj_(weight|bias)$/.exec(name);
    if (packed) {
      const hf = `${n.prefix}${n.layers}.${packed[1]}`;
      [q, k, v].forEach((part, j) => {
        const width = t.ndim > 1 ? t.shape[1] : 1;
        const data = t.dataSync<Float32Array>().slice(j * E * width, (j + 1) * E * width);
        out[`${hf}.${part}.${packed[2]}`] = new Tensor(data, t.ndim > 1 ? [E, width] : [E], 'float32');
      });
    } else if (layer && m) {
      const sub: Record<string, string> = { 'self_attn.out_proj': o, norm1: n1, linear1: f1, linear2: f2, norm2: n2 };
      if (!Object.hasOwn(sub, layer[2])) throw new Error(`internal: '${name}' has no place in a ${family} checkpoint`);
      out[`${n.prefix}${n.layers}.${layer[1]}.${sub[layer[2]]}.${m[2]}`] = t.clone();
    } else if (m && Object.hasOwn(map, m[1])) out[`${map[m[1]]}.${m[2]}`] = t.clone();
    else throw new Error(`internal: '${name}' has no place in a ${family} classifier checkpoint`);
  }
  return out;
}
