/**
 * Generate view, for a GPT (a language model from `qkv train-lm`): type a prompt, get its
 * continuation (greedy, or sampled with a temperature and a seed, run in the browser by qkv), then
 * look at the causal self-attention of every layer and head over the prompt and the generated
 * tokens: each position attends only to itself and the tokens before it, so the upper triangle of
 * every map is empty (grey).
 */
import { generateWithAttention, gptMaps, loadGptFromFiles, type GptAttention, type LoadedGpt } from '../../../src/viz/gpt-attention.ts';
import { CharTokenizer } from '../../../src/text/chars.ts';
import { field, h, onSubmit, select } from '../dom.ts';
import { loadServed, type ModelViewDeps } from '../model.ts';
import { attentionPanel } from './attention-panel.ts';

export async function initGenerate(root: HTMLElement, deps: ModelViewDeps): Promise<void> {
  const info = h('p', { class: 'model-info', id: 'model-info', 'data-testid': 'model-info', text: 'Loading the model…' });
  const prompt = h('input', { id: 'prompt', 'data-testid': 'prompt', type: 'text', size: 48, value: 'A man in a blue shirt', autocomplete: 'off', spellcheck: false });
  const decoding = select('sampling', [['greedy', 'greedy'], ['sample', 'sampling']], 'greedy');
  const temperature = h('input', { id: 'temperature', 'data-testid': 'temperature', type: 'number', min: 0.05, max: 5, step: 0.05, value: 0.8 });
  const seed = h('input', { id: 'seed', 'data-testid': 'seed', type: 'number', min: 0, step: 1, value: 1 });
  const maxTokens = h('input', { id: 'max-tokens', 'data-testid': 'max-tokens', type: 'number', min: 1, max: 64, value: 40 });
  const stopLine = h('input', { type: 'checkbox', id: 'stop-line', checked: true });
  const go = h('button', { type: 'submit', id: 'generate', 'data-testid': 'generate', text: 'Generate', disabled: true });
  const form = h('form', { id: 'generate-form', class: 'row' },
    field('Prompt', prompt), field('Decoding', decoding), field('Temperature', temperature), field('Seed', seed),
    field('Max tokens', maxTokens), field('Stop at the line end', stopLine), go);
  const promptOut = h('span', { class: 'prompt-text' });
  const continuation = h('strong', { id: 'continuation', 'data-testid': 'continuation' });
  const out = h('output', { id: 'generated', 'data-testid': 'generated' }, promptOut, continuation);
  const timing = h('small', { id: 'timing', class: 'muted' });
  const err = h('p', { class: 'error', id: 'generate-error', hidden: true });
  const tokens = h('div', { id: 'tokens', class: 'tokens' });
  const panel = attentionPanel('Generate');

  root.append(
    h('div', { class: 'panel' }, info, form, h('p', { class: 'result' }, h('span', { class: 'label', text: 'Text: ' }), out, ' ', timing), err, tokens),
    ...panel.elements,
  );

  let lm: LoadedGpt | null = null;

  const syncDecoding = () => {
    temperature.disabled = decoding.value !== 'sample';
    seed.disabled = decoding.value !== 'sample';
  };
  decoding.addEventListener('change', syncDecoding);
  syncDecoding();

  const showTokens = (g: GptAttention) => {
    const chips = (xs: string[], cls: string) => xs.map((x) => h('span', { class: cls, text: x }));
    tokens.replaceChildren(
      h('div', {}, h('span', { class: 'label', text: `prompt (${g.promptLength}): ` }), ...chips(g.tokens.slice(0, g.promptLength), 'chip')),
      h('div', {}, h('span', { class: 'label', text: `generated (${g.ids.length - g.promptLength}): ` }), ...chips(g.tokens.slice(g.promptLength), 'chip generated')),
    );
  };

  onSubmit(form, {
    button: go,
    error: err,
    ready: () => lm !== null,
    start() {
      continuation.textContent = '…';
      timing.textContent = 'generating';
    },
    work() {
      const sample = decoding.value === 'sample';
      const t = Number(temperature.value);
      if (sample && !(t > 0)) throw new Error(`the temperature must be a number > 0, got '${temperature.value}'`);
      const n = Number(maxTokens.value);
      if (!Number.isInteger(n) || n < 1) throw new Error(`max tokens must be a whole number >= 1, got '${maxTokens.value}'`);
      const s = Number(seed.value);
      if (sample && (!Number.isInteger(s) || s < 0)) throw new Error(`the seed must be a whole number >= 0, got '${seed.value}'`);
      const t0 = performance.now();
      const g = generateWithAttention(lm!, prompt.value, { maxTokens: n, temperature: sample ? t : 0, seed: sample ? s : 0, stopAtLineEnd: stopLine.checked });
      const ms = performance.now() - t0;
      promptOut.textContent = g.prompt;
      continuation.textContent = g.continuation;
      const generated = g.ids.length - g.promptLength;
      timing.textContent = `${generated} tokens in ${ms.toFixed(0)} ms, ${sample ? `sampled at temperature ${t}, seed ${s}` : 'greedy'}, ${deps.backend()?.name ?? ''} backend` +
        `${g.lineEnded ? ', ended the line' : ''}${g.cut ? `, cut to fit the context of ${lm!.model.config.blockSize} tokens` : ''}`;
      showTokens(g);
      panel.show(gptMaps(g));
      root.dataset.generated = String(Number(root.dataset.generated ?? 0) + 1);
    },
    fail() {
      continuation.textContent = '';
      timing.textContent = '';
    },
  });

  const r = await loadServed(info, deps, (tok, weights) => loadGptFromFiles(deps.served.model!.config, tok, weights));
  if (!r) return;
  lm = r.loaded;
  const c = lm.model.config;
  maxTokens.max = String(c.blockSize - 1);
  const kind = lm.tokenizer instanceof CharTokenizer ? 'characters' : 'BPE';
  info.textContent = `Model ${r.name}: GPT, ${c.nLayer} layers, ${c.nHead} heads, nEmbd ${c.nEmbd}, context ${c.blockSize} tokens, vocabulary ${lm.tokenizer.vocabSize} (${kind}), ${lm.model.numParameters().toLocaleString('en')} parameters.`;
  deps.setModelStatus(`model: ${r.name}`);
  go.disabled = false;
}
