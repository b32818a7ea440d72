/**
 * Hugging Face PEFT's LoRA adapters on qkv's models: `adapter_config.json` read and written as PEFT 0.21 writes
 * it, the target modules matched as PEFT matches them, and the adapter's tensors under PEFT's names,
 * `base_model.model.<module path>.lora_A.weight` (r, in) and `.lora_B.weight` (out, r), where the module path is
 * the Hugging Face model's (`transformer.h.0.attn.c_attn` in GPT2LMHeadModel, `model.encoder.layers.0.self_attn.q_proj`
 * in MarianMTModel). An adapter PEFT saved loads here, and one saved here loads in PEFT.
 *
 * A family states its linear layers once (models/hf/gpt2.ts `gpt2LinearSites`, marian.ts `marianLinearSites`): each
 * Hugging Face module path and the qkv layer that computes it (an nn.Linear, or rows of attention's packed q/k/v
 * projection, which Hugging Face keeps as one Conv1D in GPT-2 and as three Linears in Marian). Everything else here
 * is the same for every family: a new family adds its list of sites.
 *
 * modules_to_save (PEFT's SEQ_CLS: a classifier's head trained in full beside the pairs) is read and written for the
 * modules a family offers (`SavedModule`: a classifier's head layers), matched as PEFT matches them (the module path
 * ends with the name: 'classifier' takes DistilBERT's pre_classifier too), their tensors saved as
 * `base_model.model.<module path>.<parameter>`.
 *
 * Refused by name, not ignored: DoRA, bias training, modules_to_save on a module no family offers, layer
 * replication, trainable tokens, target_parameters, and adapters on embeddings or on the output projection (qkv ties
 * it to the embedding).
 */
import type { MultiheadAttention, InProjPart } from '../../nn/attention.ts';
import type { Linear } from '../../nn/layers.ts';
import type { LoraLinear, LoraOptions } from '../../nn/lora.ts';
import { freeze } from '../../nn/lora.ts';
import type { Module } from '../../nn/module.ts';
import { shapeToString } from '../../tensor/shape.ts';
import type { Tensor } from '../../tensor/tensor.ts';

/** One linear layer of a Hugging Face model as qkv computes it. */
export interface LinearSite {
  /** Its module path in the Hugging Face model (`transformer.h.0.attn.c_attn`): what target_modules matches. */
  path: string;
  /** The qkv layer: an nn.Linear, or rows of an attention's packed in_proj_weight. */
  layer: { linear: Linear } | { attention: MultiheadAttention; part: InProjPart };
  /** Its input and output widths (Hugging Face's in_features, out_features). */
  inFeatures: number;
  outFeatures: number;
  /** Hugging Face stores it as Conv1D (in, out), GPT-2's layers: PEFT's fan_in_fan_out. */
  conv1d: boolean;
}

/** The adapter config qkv reads and writes (adapter_config.json, PEFT's LoraConfig). */
export interface PeftLoraConfig {
  /** Rank of every pair (per module: rankPattern). */
  r: number;
  /** α (per module: alphaPattern); the update is scaled by α/r. */
  loraAlpha: number;
  /** Dropout on each adapter's input in training. */
  loraDropout: number;
  /**
   * Module names: a list (a module matches a name equal to its path or to its last dotted segments), a regular
   * expression the whole path must match, or 'all-linear'.
   */
  targetModules: string[] | string;
  /** Modules left out, matched as targetModules (null: none). */
  excludeModules: string[] | string | null;
  /** Per-module ranks: pattern → r (PEFT's rank_pattern: the pattern matches the path's end). */
  rankPattern: Record<string, number>;
  /** Per-module α: pattern → α. */
  alphaPattern: Record<string, number>;
  /** α/√r instead of α/r. */
  useRslora: boolean;
  /** PEFT's init_lora_weights: true (B zero), 'gaussian' or false (random: the adapter acts at once). */
  initLoraWeights: boolean | 'gaussian';
  /** Only layers with these indices (PEFT's layers_to_transform; null: all). */
  layersToTransform: number[] | null;
  /** PEFT's task_type ('CAUSAL_LM', 'SEQ_2_SEQ_LM', ...), written back as read. */
  taskType: string | null;
  /** Modules trained in full beside the pairs and saved with them (PEFT's modules_to_save; null: none). */
  modulesToSave: string[] | null;
  /** The base model the adapter was trained on, as its author named it: a hint only (qkv never fetches it). */
  baseModelNameOrPath: string | null;
}

/** A new adapter's config: PEFT's LoraConfig defaults (r 8, α 8, no dropout) with `over` applied. */
export function loraConfig(over: Partial<PeftLoraConfig> & Pick<PeftLoraConfig, 'targetModules'>): PeftLoraConfig {
  return {
    r: 8,
    loraAlpha: 8,
    loraDropout: 0,
    excludeModules: null,
    rankPattern: {},
    alphaPattern: {},
    useRslora: false,
    initLoraWeights: true,
    layersToTransform: null,
    taskType: null,
    modulesToSave: null,
    baseModelNameOrPath: null,
    ...over,
  };
}

const show = (v: unknown): string => JSON.stringify(v) ?? String(v);

/** Keys whose value must be the default (anything else changes the adapter in a way qkv does not compute). */
const REFUSED: [key: string, ok: (v: unknown) => boolean, why: string][] = [
  ['use_dora', (v) => v === false || v == null, 'DoRA is not supported'],
  ['bias', (v) => v === 'none' || v == null, "only bias 'none' is supported (biases stay frozen)"],
  ['lora_bias', (v) => v === false || v == null, 'a bias on lora_B is not supported'],
  ['layer_replication', (v) => v == null, 'layer replication is not supported'],
  ['trainable_token_indices', (v) => v == null, 'trainable tokens are not supported'],
  ['target_parameters', (v) => v == null, 'adapters on parameters (target_parameters) are not supported'],
  ['use_qalora', (v) => v === false || v == null, 'QA-LoRA is not supported'],
  ['alora_invocation_tokens', (v) => v == null, 'activated LoRA (aLoRA) is not supported'],
  ['use_bdlora', (v) => v == null || v === false, 'BD-LoRA is not supported'],
  ['layers_pattern', (v) => v == null || (Array.isArray(v) && v.length === 0), 'layers_pattern is not supported'],
];

/** PeftLoraConfig from adapter_config.json (parsed), or one line naming the key (`file` names the file). */
export function parseLoraConfig(json: unknown, file = 'adapter_config.json'): PeftLoraConfig {
  if (json === null || typeof json !== 'object' || Array.isArray(json))
    throw new Error(`${file}: expected a JSON object, got ${json === null ? 'null' : typeof json}`);
  const c = json as Record<string, unknown>;
  if (c.peft_type !== 'LORA')
    throw new Error(`${file}: peft_type ${show(c.peft_type)} is not supported (qkv reads LoRA adapters, 'LORA')`);
  for (const [key, ok, why] of REFUSED) if (!ok(c[key])) throw new Error(`${file}: ${key} ${show(c[key])}: ${why}`);
  const positiveInt = (k: string, v: unknown): number => {
    if (!Number.isInteger(v) || (v as number) < 1)
      throw new Error(`${file}: ${k} must be a positive integer, got ${show(v)}`);
    return v as number;
  };
  const finite = (k: string, v: unknown): number => {
    if (typeof v !== 'number' || !Number.isFinite(v)) throw new Error(`${file}: ${k} must be a number, got ${show(v)}`);
    return v;
  };
  const r = positiveInt('r', c.r ?? 8);
  const loraAlpha = finite('lora_alpha', c.lora_alpha ?? 8);
  const loraDropout = finite('lora_dropout', c.lora_dropout ?? 0);
  if (!(loraDropout >= 0 && loraDropout < 1))
    throw new Error(`${file}: lora_dropout must be in [0, 1), got ${loraDropout}`);
  const names = (k: string, v: unknown, nullable: boolean): string[] | string | null => {
    if (v == null && nullable) return null;
    if (typeof v === 'string' && v.length > 0) return v;
    if (Array.isArray(v) && v.length > 0 && v.every((s) => typeof s === 'string' && s.length > 0)) return v as string[];
    throw new Error(`${file}: ${k} must be a list of module names or a regular expression, got ${show(v)}`);
  };
  const targetModules = names('target_modules', c.target_modules, false)!;
  const excludeModules = names('exclude_modules', c.exclude_modules, true);
  const pattern = (k: string, v: unknown, check: (k: string, v: unknown) => number): Record<string, number> => {
    if (v == null) return {};
    if (typeof v !== 'object' || Array.isArray(v)) throw new Error(`${file}: ${k} must be an object, got ${show(v)}`);
    return Object.fromEntries(Object.entries(v).map(([p, x]) => [p, check(`${k}['${p}']`, x)]));
  };
  const init = c.init_lora_weights ?? true;
  if (init !== true && init !== false && init !== 'gaussian')
    throw new Error(
      `${file}: init_lora_weights ${show(init)} is not supported (true, false or 'gaussian'; the others only ` +
        'change how a new adapter starts: load it with true)',
    );
  let layersToTransform: number[] | null = null;
  const ltt = c.layers_to_transform;
  if (ltt != null) {
    const list = Array.isArray(ltt) ? ltt : [ltt];
    if (!list.every((i) => Number.isInteger(i) && i >= 0))
      throw new Error(`${file}: layers_to_transform must be a layer index or a list of them, got ${show(ltt)}`);
    layersToTransform = list as number[];
  }
  const str = (k: string): string | null => {
    const v = c[k];
    if (v == null) return null;
    if (typeof v !== 'string') throw new Error(`${file}: ${k} must be a string, got ${show(v)}`);
    return v;
  };
  const rslora = c.use_rslora ?? false;
  if (typeof rslora !== 'boolean') throw new Error(`${file}: use_rslora must be true or false, got ${show(rslora)}`);
  return {
    r,
    loraAlpha,
    loraDropout,
    targetModules,
    excludeModules,
    rankPattern: pattern('rank_pattern', c.rank_pattern, positiveInt),
    alphaPattern: pattern('alpha_pattern', c.alpha_pattern, finite),
    useRslora: rslora,
    initLoraWeights: init as boolean | 'gaussian',
    layersToTransform,
    taskType: str('task_type'),
    modulesToSave: modulesToSaveOf(c.modules_to_save, file),
    baseModelNameOrPath: str('base_model_name_or_path'),
  };
}

/** modules_to_save: null, or a list of module names (an empty list is none). */
function modulesToSaveOf(v: unknown, file: string): string[] | null {
  if (v == null || (Array.isArray(v) && v.length === 0)) return null;
  if (Array.isArray(v) && v.every((s) => typeof s === 'string' && s.length > 0)) return v as string[];
  throw new Error(`${file}: modules_to_save must be a list of module names, got ${show(v)}`);
}

/**
 * adapter_config.json as PEFT 0.21 writes it for a LoRA adapter (every key it writes, in its sorted order, the
 * ones qkv does not use at PEFT's defaults), `fanInFanOut` true for GPT-2's Conv1D layers.
 */
export function loraConfigJson(c: PeftLoraConfig, fanInFanOut: boolean): Record<string, unknown> {
  const json: Record<string, unknown> = {
    alora_invocation_tokens: null,
    alpha_pattern: c.alphaPattern,
    arrow_config: null,
    auto_mapping: null,
    base_model_name_or_path: c.baseModelNameOrPath,
    bias: 'none',
    corda_config: null,
    ensure_weight_tying: false,
    eva_config: null,
    exclude_modules: c.excludeModules,
    fan_in_fan_out: fanInFanOut,
    inference_mode: true,
    init_lora_weights: c.initLoraWeights,
    kasa_config: null,
    layer_replication: null,
    layers_pattern: null,
    layers_to_transform: c.layersToTransform,
    loftq_config: {},
    lora_alpha: c.loraAlpha,
    lora_bias: false,
    lora_dropout: c.loraDropout,
    lora_ga_config: null,
    megatron_config: null,
    megatron_core: 'megatron.core',
    modules_to_save: c.modulesToSave,
    monteclora_config: null,
    peft_type: 'LORA',
    peft_version: '0.21.0',
    qalora_group_size: 16,
    r: c.r,
    rank_pattern: c.rankPattern,
    revision: null,
    target_modules: c.targetModules,
    target_parameters: null,
    task_type: c.taskType,
    trainable_token_indices: null,
    use_bdlora: null,
    use_dora: false,
    use_qalora: false,
    use_rslora: c.useRslora,
    velora_config: null,
  };
  return json;
}

/** Python's re.fullmatch(pattern, s) for the patterns adapter configs use. */
function fullMatch(pattern: string, s: string): boolean {
  return new RegExp(`^(?:${pattern})$`).test(s);
}

/** PEFT's module matching (check_target_module_exists): a list by equal path or dotted suffix, a string by regex. */
function matches(names: string[] | string, path: string): boolean {
  if (typeof names === 'string') return fullMatch(names, path);
  return names.some((n) => path === n || path.endsWith(`.${n}`));
}

/** The first layer index in a path (PEFT: the number after the first `<name>.`), or null. */
function layerIndex(path: string): number | null {
  const m = /^.*?\.[^.]*\.(\d+)\./.exec(path);
  return m ? Number(m[1]) : null;
}

/** The pattern key of `patterns` that matches the end of `path` (PEFT's get_pattern_key), or undefined. */
function patternFor(patterns: Record<string, number>, path: string): number | undefined {
  for (const [p, v] of Object.entries(patterns)) if (new RegExp(`^(?:.*\\.)?(?:${p})$`).test(path)) return v;
  return undefined;
}

/** The sites an adapter config adapts, with each one's rank and α; an error names a target that matched nothing. */
export function targetSites(
  sites: readonly LinearSite[],
  c: PeftLoraConfig,
): { site: LinearSite; options: LoraOptions }[] {
  const all = typeof c.targetModules === 'string' && c.targetModules.toLowerCase() === 'all-linear';
  const chosen = sites.filter((s) => {
    if (c.excludeModules && matches(c.excludeModules, s.path)) return false;
    if (!all && !matches(c.targetModules, s.path)) return false;
    if (c.layersToTransform) {
      const i = layerIndex(s.path);
      return i !== null && c.layersToTransform.includes(i);
    }
    return true;
  });
  if (Array.isArray(c.targetModules)) {
    const unused = c.targetModules.filter((t) => !sites.some((s) => matches([t], s.path)));
    if (unused.length > 0)
      throw new Error(
        `target_modules ${show(unused)} match none of the model's linear layers (qkv adapts: ` +
          `${[...new Set(sites.map((s) => s.path.split('.').pop()))].join(', ')}; embeddings and the tied output ` +
          'projection take no adapter)',
      );
  }
  if (chosen.length === 0)
    throw new Error(`target_modules ${show(c.targetModules)} match none of the model's linear layers`);
  return chosen.map((site) => {
    const r = patternFor(c.rankPattern, site.path) ?? c.r;
    const alpha = patternFor(c.alphaPattern, site.path) ?? c.loraAlpha;
    const init = c.initLoraWeights === 'gaussian' ? 'gaussian' : c.initLoraWeights ? 'default' : 'random';
    return { site, options: { r, alpha, dropout: c.loraDropout, rslora: c.useRslora, init } };
  });
}

/** A module a family lets modules_to_save train in full: its Hugging Face path and parameters by their names. */
export interface SavedModule {
  /** Its module path in the Hugging Face model (`classifier`, `classifier.dense`...): what modules_to_save matches. */
  path: string;
  /** Its parameters under their Hugging Face names within the module (`weight`, `out_proj.bias`). */
  params: [name: string, tensor: Tensor][];
}

/** An adapter attached to a model: each adapted site's path and its LoRA pair. */
export interface AttachedLora {
  config: PeftLoraConfig;
  /** The adapted sites in the family's order, each with its pair. */
  pairs: { site: LinearSite; lora: LoraLinear }[];
  /** The modules modules_to_save trains in full (their weights the model's own, unfrozen). */
  saved: SavedModule[];
  /** Whether the sites are Conv1D in Hugging Face (PEFT's fan_in_fan_out, written in the config). */
  fanInFanOut: boolean;
}

/**
 * Attach new LoRA pairs to the sites `config` targets and freeze the rest of `model` (the base weights train no
 * more): PEFT's get_peft_model. The pairs start as `config.initLoraWeights` says.
 */
export function attachLora(
  model: Module,
  sites: readonly LinearSite[],
  config: PeftLoraConfig,
  saveable: readonly SavedModule[] = [],
): AttachedLora {
  const targets = targetSites(sites, config);
  const saved = savedModules(saveable, config.modulesToSave, targets);
  freeze(model);
  const pairs = targets.map(({ site, options }) => {
    const l = site.layer;
    const lora = 'linear' in l ? l.linear.addLora(options) : l.attention.addInProjLora(l.part, options);
    return { site, lora };
  });
  for (const m of saved) for (const [, p] of m.params) p.requiresGrad = true;
  return { config, pairs, saved, fanInFanOut: pairs.some((p) => p.site.conv1d) };
}

/**
 * The offered modules modules_to_save names, as PEFT matches them (the module path ends with the name). A list that
 * matches none of them, or a module that also holds a LoRA pair, is refused by name.
 */
function savedModules(
  saveable: readonly SavedModule[],
  names: string[] | null,
  targets: readonly { site: LinearSite }[],
): SavedModule[] {
  if (!names) return [];
  const chosen = saveable.filter((m) => names.some((n) => m.path.endsWith(n)));
  if (chosen.length === 0)
    throw new Error(
      `modules_to_save ${show(names)} match no module qkv trains in full (this model offers ` +
        `${saveable.length ? saveable.map((m) => m.path).join(', ') : 'none'})`,
    );
  for (const m of chosen) {
    const t = targets.find(({ site }) => site.path === m.path || site.path.startsWith(`${m.path}.`));
    if (t)
      throw new Error(
        `modules_to_save trains ${m.path} in full and target_modules adapts ${t.site.path}: choose one of the two`,
      );
  }
  return chosen;
}

/** PEFT's key of a site's A or B: `base_model.model.<path>.lora_A.weight`. */
export function peftKey(path: string, factor: 'A' | 'B'): string {
  return `base_model.model.${path}.lora_${factor}.weight`;
}

/** The adapter's tensors under PEFT's names (what adapter_model.safetensors holds). The tensors are the live ones. */
export function loraStateDict(a: AttachedLora): Record<string, Tensor> {
  const out: Record<string, Tensor> = {};
  for (const { site, lora } of a.pairs) {
    out[peftKey(site.path, 'A')] = lora.loraA.weight;
    out[peftKey(site.path, 'B')] = lora.loraB.weight;
  }
  for (const m of a.saved) for (const [name, t] of m.params) out[`base_model.model.${m.path}.${name}`] = t;
  return out;
}

/**
 * Load an adapter file's tensors (PEFT's names) into the attached pairs. Keys may name the module path with or
 * without the task model's prefix (`transformer.`, `model.`, which an adapter of a bare GPT2Model or MarianModel
 * lacks) and may carry PEFT's adapter name (`lora_A.default.weight`). Every pair must be given, with its shape;
 * an unknown key is refused by name.
 */
export function loadLoraStateDict(a: AttachedLora, tensors: Record<string, Tensor>, file: string): void {
  const wanted = new Map<string, Tensor>();
  for (const { site, lora } of a.pairs) {
    wanted.set(peftKey(site.path, 'A'), lora.loraA.weight);
    wanted.set(peftKey(site.path, 'B'), lora.loraB.weight);
  }
  for (const m of a.saved) for (const [name, t] of m.params) wanted.set(`base_model.model.${m.path}.${name}`, t);
  const byKey = new Map<string, Tensor>();
  for (const [k, t] of Object.entries(tensors)) {
    const key = canonicalKey(k, wanted);
    if (!key) throw new Error(`${file}: tensor '${k}' is not a LoRA pair of a module adapter_config.json targets`);
    if (byKey.has(key)) throw new Error(`${file}: tensor '${k}' appears twice`);
    byKey.set(key, t);
  }
  for (const [key, dst] of wanted) {
    const src = byKey.get(key);
    if (!src) throw new Error(`${file}: tensor '${key}' is missing (adapter_config.json targets its module)`);
    if (shapeToString(src.shape) !== shapeToString(dst.shape))
      throw new Error(
        `${file}: '${key}' has shape ${shapeToString(src.shape)}, the model and adapter_config.json imply ` +
          `${shapeToString(dst.shape)}`,
      );
    if (src.dtype !== 'float32') throw new Error(`${file}: '${key}' must hold floating-point values, got ${src.dtype}`);
    dst.write(src.dataSync<Float32Array>());
  }
}

/** A file's key as one of `wanted`'s: adapter names dropped, a missing task-model prefix restored; null: none. */
function canonicalKey(k: string, wanted: Map<string, Tensor>): string | null {
  const bare = k.replace(/\.lora_([AB])\.[^.]+\.weight$/, '.lora_$1.weight');
  if (wanted.has(bare)) return bare;
  const m = /^base_model\.model\.(.+)$/.exec(bare);
  if (!m) return null;
  for (const prefix of ['transformer.', 'model.']) {
    const key = `base_model.model.${prefix}${m[1]}`;
    if (wanted.has(key)) return key;
  }
  return null;
}

/**
 * Remove the adapter from the model; with `merge`, first add each pair's ΔW = scaling·B·A into the weight it
 * adapts (PEFT's merge_and_unload), so the model is a plain one again. The base stays frozen: unfreeze to train it.
 */
export function detachLora(a: AttachedLora, merge: boolean): void {
  for (const { site } of a.pairs) {
    const l = site.layer;
    if ('linear' in l) l.linear.removeLora(merge);
    else l.attention.removeInProjLora(merge);
  }
}
