/**
 * Generate view, for a GPT (a language model from `qkv train-lm` or a Hugging Face GPT-2: the one
 * chosen in the model switcher among those `qkv explore` serves, opened at once, or a folder opened
 * in the page with the picker): type a prompt, get its
 * continuation (greedy, or sampled with a temperature and a seed, run in the browser by qkv), then
 * look at the causal self-attention of every layer and head over the prompt and the generated
 * tokens: each position attends only to itself and the tokens before it, so the upper triangle of
 * every map is empty (grey). Below: the next-token distribution after the prompt (live as the
 * sampling settings change) and the neuron view of one head. The model is opened and run in the
 * model worker (runner.ts): the page stays responsive, and a long run can be cancelled.
 */
import { gptMaps, type GptAttention } from '../../../src/viz/gpt-attention.ts';
import { field, h, nextFrame, onSubmit, select } from '../dom.ts';
import { NO_MODEL, type ModelViewDeps, type ServedEntry } from '../model.ts';
import type { GptInfo, LmInfo } from '../model-worker.ts';
import { heldLine } from '../page-memory.ts';
import { runner } from '../runner.ts';
import { attentionPanel } from './attention-panel.ts';
import { encoderPanel, type EncoderPanel } from './encoder.ts';
import { nextTokenPanel } from './next-token.ts';
import { neuronPanel } from './neuron.ts';
import { kvSharing, rotaryPanel } from './rotary.ts';

export interface GenerateView {
  /** Open this served GPT (null: none is served) and use it from now on. */
  use(entry: ServedEntry | null): Promise<void>;
}

/** The token chips the Generate view adds in one frame. */
const TOKEN_CHIPS_PER_PIECE = 8;

export function initGenerate(root: HTMLElement, deps: ModelViewDeps): GenerateView {
  // The served model's line is #model-info, unless a translation model is served (the Translate view owns #model-info).
  const ownsInfo = !deps.served.models.some((m) => m.kind === 'seq2seq');
  const infoId = ownsInfo ? 'model-info' : 'generate-info';
  const info = h('p', {
    class: 'model-info',
    id: infoId,
    'data-testid': infoId,
    text: ownsInfo ? 'Loading the model…' : '',
  });
  const prompt = h('input', {
    id: 'prompt',
    'data-testid': 'prompt',
    type: 'text',
    size: 48,
    value: 'A man in a blue shirt',
    autocomplete: 'off',
    spellcheck: false,
  });
  const decoding = select(
    'sampling',
    [
      ['greedy', 'greedy'],
      ['sample', 'sampling'],
    ],
    'greedy',
  );
  const temperature = h('input', {
    id: 'temperature',
    'data-testid': 'temperature',
    type: 'number',
    min: 0.05,
    max: 5,
    step: 0.05,
    value: 0.8,
  });
  const seed = h('input', { id: 'seed', 'data-testid': 'seed', type: 'number', min: 0, step: 1, value: 1 });
  const topK = h('input', {
    id: 'top-k',
    'data-testid': 'top-k',
    type: 'number',
    min: 0,
    step: 1,
    value: 0,
    title: '0 = all tokens',
  });
  const topP = h('input', {
    id: 'top-p',
    'data-testid': 'top-p',
    type: 'number',
    min: 0.01,
    max: 1,
    step: 0.01,
    value: 1,
  });
  const maxTokens = h('input', {
    id: 'max-tokens',
    'data-testid': 'max-tokens',
    type: 'number',
    min: 1,
    max: 64,
    value: 40,
  });
  const stopLine = h('input', { type: 'checkbox', id: 'stop-line', checked: true });
  const go = h('button', {
    type: 'submit',
    id: 'generate',
    'data-testid': 'generate',
    text: 'Generate',
    disabled: true,
  });
  const form = h(
    'form',
    { id: 'generate-form', class: 'row' },
    field('Prompt', prompt),
    field('Decoding', decoding),
    field('Temperature', temperature),
    field('Top-k', topK),
    field('Top-p', topP),
    field('Seed', seed),
    field('Max tokens', maxTokens),
    field('Stop at the line end', stopLine),
    go,
  );
  const folderInput = h('input', {
    type: 'file',
    id: 'folder-input',
    'data-testid': 'folder-input',
    webkitdirectory: true,
    multiple: true,
  });
  const folderStatus = h('span', { id: 'folder-status', 'data-testid': 'folder-status', class: 'muted' });
  const drop = h(
    'div',
    { class: 'dropzone', id: 'dropzone' },
    field('Open a model folder', folderInput),
    h('span', {
      class: 'muted',
      text:
        ' or drop its files here (config.json, tokenizer.json, ' +
        'model.safetensors: a Hugging Face GPT-2 download such as gpt2 or ' +
        'distilgpt2, a BERT, DistilBERT, RoBERTa or XLM-R one, or a qkv train-lm folder). Nothing leaves this page. ',
    }),
    folderStatus,
  );
  const promptOut = h('span', { class: 'prompt-text' });
  const continuation = h('strong', { id: 'continuation', 'data-testid': 'continuation' });
  const out = h('output', { id: 'generated', 'data-testid': 'generated' }, promptOut, continuation);
  // Ids apart from the Translate view's (both views can be on the page): gpt-…
  const timing = h('small', { id: 'gpt-timing', class: 'muted' });
  const err = h('p', { class: 'error', id: 'generate-error', role: 'alert', hidden: true });
  const tokens = h('div', { id: 'gpt-tokens', class: 'tokens' });
  const panel = attentionPanel('Generate', 'gpt-');
  const sampling = () => {
    const sample = decoding.value === 'sample';
    const k = Number(topK.value);
    const p = Number(topP.value);
    if (!Number.isInteger(k) || k < 0)
      throw new Error(`top-k must be a whole number >= 0 (0 = all), got '${topK.value}'`);
    if (!(p > 0 && p <= 1)) throw new Error(`top-p must be in (0, 1], got '${topP.value}'`);
    const t = Number(temperature.value);
    if (sample && !(t > 0)) throw new Error(`the temperature must be a number > 0, got '${temperature.value}'`);
    const s = Number(seed.value);
    if (sample && (!Number.isInteger(s) || s < 0))
      throw new Error(`the seed must be a whole number >= 0, got '${seed.value}'`);
    return { temperature: sample ? t : 0, topK: k > 0 ? k : undefined, topP: p, seed: sample ? s : 0 };
  };
  // Greedy decoding still shows the model's distribution (temperature 1), and marks its argmax.
  const nextToken = nextTokenPanel(() => {
    const o = sampling();
    return decoding.value === 'sample' ? o : { ...o, temperature: 1, greedy: true };
  });
  const neuron = neuronPanel();
  const positions = rotaryPanel();
  /** The encoder's panel (views/encoder.ts), made and appended when an encoder is first opened. */
  let encoder: EncoderPanel | null = null;
  const encoderView = (): EncoderPanel => {
    if (!encoder) {
      encoder = encoderPanel(root);
      root.append(...encoder.elements);
    }
    return encoder;
  };
  const result = h('p', { class: 'result' }, h('span', { class: 'label', text: 'Text: ' }), out, ' ', timing);

  root.append(
    h('div', { class: 'panel' }, drop, info, form, result, err, tokens),
    nextToken.element,
    ...panel.elements,
    positions.element,
    neuron.element,
  );
  /** The GPT's parts of the view, hidden while an encoder is open (which shows its own). */
  const gptParts = [form, result, tokens, ...panel.elements];

  let lm: GptInfo | null = null;
  /** Counts model loads: a load that finishes after a newer one started is dropped. */
  let opening = 0;

  const syncDecoding = () => {
    temperature.disabled = decoding.value !== 'sample';
    seed.disabled = decoding.value !== 'sample';
  };
  decoding.addEventListener('change', syncDecoding);
  syncDecoding();
  // The next-token view follows the sampling settings live.
  for (const el of [decoding, temperature, topK, topP, seed])
    el.addEventListener('input', () => void nextToken.update());
  decoding.addEventListener('change', () => void nextToken.update());

  /** Use this model from now on: its description, the limits of the form, the views emptied. */
  const setModel = (m: LmInfo, name: string, source: string) => {
    if ('kind' in m) {
      // A BERT-family encoder: its attention and fill-mask (views/encoder.ts) in place of generation.
      lm = null;
      go.disabled = true;
      for (const e of gptParts) e.hidden = true;
      positions.clear();
      void panel.show(null);
      nextToken.clear();
      neuron.clear();
      err.hidden = true;
      info.textContent =
        `Model ${name}: ${source}, an encoder (it reads a text whole, every token attending to every other; it ` +
        `generates nothing), ${m.nLayer} layers, ${m.nHead} heads, ${m.dModel} wide, at most ${m.maxTokens} ` +
        `tokens, vocabulary ${m.vocabSize}, ${m.parameters.toLocaleString('en')} parameters.`;
      info.classList.remove('error', 'warning');
      deps.setModelStatus(`model: ${name}`);
      encoderView().use(m);
      root.dataset.encoder = 'true';
      return;
    }
    const c: GptInfo = m;
    encoder?.use(null);
    delete root.dataset.encoder;
    for (const e of gptParts) e.hidden = false;
    lm = c;
    maxTokens.max = String(c.blockSize - 1);
    // A Hugging Face folder's own settings (generation_config.json, else config.json), as the pipeline starts from.
    const g = c.generation;
    // Its sampling settings where it samples (do_sample); a greedy folder leaves them open (all tokens, p 1).
    if (g) {
      decoding.value = g.doSample ? 'sample' : 'greedy';
      temperature.value = String(g.doSample ? g.temperature : 0.8);
      topK.value = String(g.doSample ? g.topK : 0);
      topP.value = String(g.doSample ? g.topP : 1);
      maxTokens.value = String(Math.max(1, Math.min(g.maxNewTokens ?? 20, c.blockSize - 1)));
      syncDecoding();
    }
    info.textContent =
      `Model ${name}: ${source}, ${c.nLayer} layers, ${c.nHead} heads, nEmbd ` +
      `${c.nEmbd}, context ${c.blockSize} tokens, vocabulary ` +
      `${c.vocabSize} (${c.tokenizer}), ` +
      `${c.parameters.toLocaleString('en')} parameters.` +
      (c.rotary ? ' Rotary positions.' : '') +
      (kvSharing(c.nHead, c.nKVHead) ? ` ${kvSharing(c.nHead, c.nKVHead)}` : '') +
      (c.memory ? ` ${heldLine(c.memory)}` : '');
    info.classList.remove('error', 'warning');
    positions.clear();
    // GPT-2 ends a document with <|endoftext|>, not at a line end.
    stopLine.parentElement!.querySelector('span')!.textContent =
      c.tokenizer === 'byte-level BPE' ? 'Stop at <|endoftext|>' : 'Stop at the line end';
    deps.setModelStatus(`model: ${name}`);
    void panel.show(null);
    nextToken.clear();
    neuron.clear();
    promptOut.textContent = '';
    continuation.textContent = '';
    timing.textContent = '';
    err.hidden = true;
    tokens.replaceChildren();
    go.disabled = false;
  };

  const openFolder = async (files: Iterable<File>) => {
    folderStatus.textContent = 'reading…';
    folderStatus.classList.remove('error');
    await nextFrame();
    try {
      const r = await runner.call('openLocal', { files: [...files] }, (s) => {
        folderStatus.textContent = s;
      });
      opening++; // a served model still loading does not replace it
      setModel(r, r.name, `${r.source} from a local folder`);
      delete root.dataset.model;
      deps.onModel?.('');
      folderStatus.textContent = `opened ${r.name}: ${(r.bytes / 1e6).toFixed(1)} MB in ${r.seconds.toFixed(1)} s`;
      root.dataset.opened = String(Number(root.dataset.opened ?? 0) + 1);
    } catch (e) {
      // The model in use (if any) stays.
      folderStatus.textContent = `Could not open the folder: ${(e as Error).message}`;
      folderStatus.classList.add('error');
      root.dataset.openFailed = String(Number(root.dataset.openFailed ?? 0) + 1);
    }
  };
  folderInput.addEventListener('change', () => {
    if (folderInput.files && folderInput.files.length > 0) void openFolder([...folderInput.files]);
  });
  root.addEventListener('dragover', (e) => {
    e.preventDefault();
    drop.classList.add('over');
  });
  root.addEventListener('dragleave', () => drop.classList.remove('over'));
  root.addEventListener('drop', (e) => {
    e.preventDefault();
    drop.classList.remove('over');
    void droppedFiles(e.dataTransfer).then((files) => openFolder(files));
  });

  /**
   * The prompt's and the generated tokens as chips, TOKEN_CHIPS_PER_PIECE a frame, the first at once: a
   * big vocabulary's rare tokens (scripts, control bytes) are slow to shape, tens of ms for a few dozen.
   */
  const showTokens = async (g: GptAttention): Promise<void> => {
    const prompt = h('div', {}, h('span', { class: 'label', text: `prompt (${g.promptLength}): ` }));
    const generated = h(
      'div',
      {},
      h('span', { class: 'label', text: `generated (${g.ids.length - g.promptLength}): ` }),
    );
    tokens.replaceChildren(prompt, generated);
    const n = g.tokens.length;
    // A piece a frame: what costs is the browser's shaping of the text, after the script has run.
    for (let at = 0; at < n; at += TOKEN_CHIPS_PER_PIECE) {
      if (at > 0) await nextFrame();
      for (let i = at; i < Math.min(n, at + TOKEN_CHIPS_PER_PIECE); i++)
        (i < g.promptLength ? prompt : generated).append(
          h('span', { class: i < g.promptLength ? 'chip' : 'chip generated', text: g.tokens[i] }),
        );
    }
  };

  onSubmit(form, {
    button: go,
    error: err,
    ready: () => lm !== null,
    doing: 'generating',
    cancel: () => runner.cancel(),
    start() {
      continuation.textContent = '…';
      timing.textContent = 'generating';
    },
    async work() {
      const sample = decoding.value === 'sample';
      const o = sampling();
      const t = o.temperature;
      const s = o.seed;
      const n = Number(maxTokens.value);
      if (!Number.isInteger(n) || n < 1)
        throw new Error(`max tokens must be a whole number >= 1, got '${maxTokens.value}'`);
      const t0 = performance.now();
      delete root.dataset.firstToken;
      const g = await runner.call(
        'generate',
        {
          prompt: prompt.value,
          options: {
            maxTokens: n,
            temperature: t,
            topK: o.topK,
            topP: o.topP,
            seed: s,
            stopAtLineEnd: stopLine.checked,
          },
        },
        // Each token as the worker makes it: the first's time from the click, on the view (data-first-token, ms).
        (line) => {
          root.dataset.firstToken ??= (performance.now() - t0).toFixed(0);
          timing.textContent = line;
        },
      );
      const ms = performance.now() - t0;
      promptOut.textContent = g.prompt;
      continuation.textContent = g.continuation;
      const generated = g.ids.length - g.promptLength;
      timing.textContent =
        `${generated} tokens in ${ms.toFixed(0)} ms, ` +
        `${sample ? `sampled at temperature ${t}, seed ${s}` : 'greedy'}, ` +
        `${deps.backend()?.name ?? ''} backend` +
        (g.lineEnded ? ', ended the line' : '') +
        (g.cut ? `, cut to fit the context of ${lm!.blockSize} tokens` : '');
      await nextFrame();
      await showTokens(g);
      // Drawn in pieces (paced.ts), each view from a frame of its own: the page keeps its frames while a long
      // text's maps (or a big model's heads) come in.
      await nextFrame();
      await panel.show({ ...gptMaps(g), kvHeads: lm!.nKVHead });
      await nextFrame();
      positions.show(lm!, g.tokens);
      await nextFrame();
      await nextToken.show(g.ids.slice(0, g.promptLength));
      await nextFrame();
      await neuron.show(lm!, g.ids, g.tokens);
      root.dataset.generated = String(Number(root.dataset.generated ?? 0) + 1);
    },
    fail() {
      // Nothing of the previous run is left under the message.
      promptOut.textContent = '';
      continuation.textContent = '';
      timing.textContent = '';
      tokens.replaceChildren();
      void panel.show(null);
      nextToken.clear();
      neuron.clear();
      positions.clear();
    },
  });

  const use = async (entry: ServedEntry | null): Promise<void> => {
    const mine = ++opening;
    info.classList.remove('error', 'warning');
    const fail = (message: string) => {
      info.textContent = `Could not load the model: ${message}`;
      info.classList.add('error');
      deps.setModelStatus('model failed to load');
    };
    if (deps.served.error) return fail(deps.served.error.message);
    if (!entry) {
      if (!ownsInfo) {
        info.textContent =
          'The explorer serves a translation model (see Translate). Open a GPT ' +
          'folder above: a Hugging Face GPT-2 download (gpt2, distilgpt2, ...) ' +
          'or a qkv train-lm folder.';
        info.classList.add('warning');
        deps.setModelStatus('no GPT served');
        return;
      }
      info.textContent =
        `${NO_MODEL} Or open a GPT folder above: a Hugging Face GPT-2 download ` +
        `(gpt2, distilgpt2, ...) or a qkv train-lm folder.`;
      info.classList.add('warning');
      deps.setModelStatus('no model');
      return;
    }
    info.textContent = `Loading ${entry.name}…`;
    let opened: LmInfo;
    try {
      opened = (await runner.call('openServed', { view: 'generate', entry }, (s) => {
        if (mine === opening) info.textContent = s;
      })) as LmInfo;
    } catch (e) {
      if (mine === opening) fail((e as Error).message);
      return;
    }
    if (mine !== opening) return; // another model was chosen meanwhile
    setModel(
      opened,
      entry.name,
      'kind' in opened ? `Hugging Face ${opened.family}` : entry.kind === 'hf-gpt2' ? 'Hugging Face GPT-2' : 'GPT',
    );
    root.dataset.model = entry.id;
  };
  return { use };
}

/** The files of a drop: a dropped folder is walked (its own files), loose files are taken as they are. */
async function droppedFiles(dt: DataTransfer | null): Promise<File[]> {
  if (!dt) return [];
  const out: File[] = [];
  const entries = [...dt.items].map((i) => i.webkitGetAsEntry?.()).filter((e): e is FileSystemEntry => !!e);
  const fileOf = (e: FileSystemFileEntry) => new Promise<File>((res, rej) => e.file(res, rej));
  for (const e of entries) {
    if (e.isFile) out.push(await fileOf(e as FileSystemFileEntry));
    else if (e.isDirectory) {
      const reader = (e as FileSystemDirectoryEntry).createReader();
      for (;;) {
        const batch = await new Promise<FileSystemEntry[]>((res, rej) => reader.readEntries(res, rej));
        if (batch.length === 0) break;
        for (const f of batch) if (f.isFile) out.push(await fileOf(f as FileSystemFileEntry));
      }
    }
  }
  if (out.length === 0) out.push(...dt.files);
  return out;
}
