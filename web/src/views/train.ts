/**
 * Train view: a character GPT trained live in the page, in the model worker (train-worker.ts), by
 * qkv's own trainer (LmTrainer, as `qkv train-lm`). The text (six sonnets by default, or any .txt),
 * the model's shape and the recipe are set here; Start begins a run, which goes on a slice of a
 * quarter of a second at a time: after each, the loss curve (the training loss's moving average and
 * the validation loss) grows, and the sample (the prompt continued greedily) and its attention maps
 * are those of the model as it is now. Pause stops asking for slices (the slice under way finishes);
 * Resume asks again, and the run goes on exactly as if it had not paused. Save downloads the model
 * as a zipped folder (config.json, tokenizer.json, model.safetensors under a folder of the name
 * given), which `qkv generate --model NAME` reads once unzipped.
 */
import { lineChartSvg } from '../../../src/viz/linechart.ts';
import { gptMaps } from '../../../src/viz/gpt-attention.ts';
import { field, h } from '../dom.ts';
import { download, figureBox, showFigure } from '../figures.ts';
import { runner } from '../runner.ts';
import type { TrainSettings, TrainSlice } from '../train-worker.ts';
import { SONNETS } from '../train-text.ts';
import { attentionPanel } from './attention-panel.ts';

/** Milliseconds of training per slice: the curve and the sample update about this often. */
const SLICE_MS = 250;

type State = 'idle' | 'starting' | 'running' | 'pausing' | 'paused' | 'done' | 'failed';

export function initTrain(root: HTMLElement): void {
  const num = (id: string, value: number, o: { min?: number; max?: number; step?: number | 'any' } = {}) =>
    h('input', { id, 'data-testid': id, type: 'number', value, min: o.min ?? 1, step: o.step ?? 1, max: o.max });
  const text = h('textarea', { id: 'train-text', 'data-testid': 'train-text', rows: 8, spellcheck: false });
  text.value = SONNETS;
  const textInfo = h('span', { class: 'muted', id: 'train-text-info' });
  const file = h('input', { type: 'file', id: 'train-file', accept: '.txt,text/plain' });
  const layers = num('train-layers', 2, { max: 12 });
  const heads = num('train-heads', 2, { max: 16 });
  const width = num('train-width', 64, { max: 1024 });
  const context = num('train-context', 64, { max: 1024 });
  const batch = num('train-batch', 16, { max: 512 });
  const lr = num('train-lr', 0.003, { min: 0.0001, max: 0.1, step: 'any' });
  const warmup = num('train-warmup', 20, { min: 0 });
  const steps = num('train-steps', 1000);
  const seed = num('train-seed', 1, { min: 0 });
  const start = h('button', { type: 'submit', id: 'train-start', 'data-testid': 'train-start', text: 'Start' });
  const pause = h('button', { type: 'button', id: 'train-pause', 'data-testid': 'train-pause', text: 'Pause' });
  const resume = h('button', { type: 'button', id: 'train-resume', 'data-testid': 'train-resume', text: 'Resume' });
  const name = h('input', { id: 'train-name', 'data-testid': 'train-name', type: 'text', size: 16 });
  name.value = 'gpt-sonnets';
  const save = h('button', { type: 'button', id: 'train-save', 'data-testid': 'train-save', text: 'Save' });
  const saved = h('span', { class: 'muted', id: 'train-saved', 'data-testid': 'train-saved' });
  const status = h('p', { id: 'train-status', 'data-testid': 'train-status', role: 'status', 'aria-live': 'polite' });
  const err = h('p', { class: 'error', id: 'train-error', role: 'alert', hidden: true });
  const form = h(
    'form',
    { id: 'train-form', class: 'row' },
    field('Layers', layers),
    field('Heads', heads),
    field('Width', width),
    field('Context', context),
    field('Batch', batch),
    field('Learning rate', lr),
    field('Warmup', warmup),
    field('Steps', steps),
    field('Seed', seed),
    start,
    pause,
    resume,
  );
  const prompt = h('input', {
    id: 'train-prompt',
    'data-testid': 'train-prompt',
    type: 'text',
    size: 32,
    value: 'Shall I',
    autocomplete: 'off',
    spellcheck: false,
  });
  const maxTokens = num('train-max-tokens', 40, { max: 1023 });
  const sampleNow = h('button', {
    type: 'button',
    id: 'train-sample-now',
    'data-testid': 'train-sample-now',
    text: 'Sample now',
    title: 'while paused: the prompt continued by the model as it is',
  });
  const promptOut = h('span', { class: 'prompt-text' });
  const continuation = h('strong', { id: 'train-continuation', 'data-testid': 'train-continuation' });
  const figLoss = figureBox('train-loss');
  const panel = attentionPanel('Train', 'train-');

  root.append(
    h(
      'div',
      { class: 'panel' },
      h(
        'p',
        {},
        'Train a character-level GPT on a text, here in the page: in the model worker, by qkv’s own trainer ',
        '(as ',
        h('code', { text: 'qkv train-lm' }),
        ': AdamW, warmup then cosine decay, clipping). The last tenth of the lines is held out for the validation ',
        'loss; the other lines’ characters are the vocabulary.',
      ),
      field('Text (one line per line of verse or document)', text),
      h('div', { class: 'row' }, field('or open a text file', file), textInfo),
      form,
      status,
      err,
      h('div', { class: 'row' }, field('Folder name', name), save, saved),
    ),
    h('div', { class: 'panel' }, h('h2', { text: 'Loss' }), figLoss),
    h(
      'div',
      { class: 'panel' },
      h('h2', { text: 'Sample' }),
      h('div', { class: 'row' }, field('Prompt', prompt), field('Max tokens', maxTokens), sampleNow),
      h('p', { class: 'result' }, h('output', { id: 'train-sample' }, promptOut, continuation)),
    ),
    ...panel.elements,
  );

  let state: State = 'idle';
  /** The slice loop under way (null: none), so that a new run waits for it to end. */
  let loop: Promise<void> | null = null;
  let planned = 0;
  /** The loss curve: a point per slice. */
  const curve = { x: [] as number[], smoothed: [] as number[], val: [] as number[] };
  let stepMs = 0;

  const showText = () => {
    const lines = text.value.split(/\r?\n/).filter((l, i, all) => l !== '' || i < all.length - 1).length;
    textInfo.textContent = `${lines.toLocaleString('en')} lines, ${text.value.length.toLocaleString('en')} characters`;
  };
  text.addEventListener('input', showText);
  showText();
  file.addEventListener('change', async () => {
    const f = file.files?.[0];
    if (!f) return;
    text.value = await f.text();
    showText();
  });

  const setState = (s: State) => {
    state = s;
    root.dataset.state = s;
    pause.disabled = s !== 'running';
    resume.disabled = s !== 'paused';
    save.disabled = !['running', 'pausing', 'paused', 'done'].includes(s);
    sampleNow.disabled = s !== 'paused' && s !== 'done';
    start.disabled = s === 'starting' || s === 'pausing';
    const last = curve.x.length - 1;
    const where =
      last < 0
        ? ''
        : `step ${curve.x[last]} / ${planned} · train loss ${curve.smoothed[last].toFixed(3)} (moving average) · ` +
          `val loss ${curve.val[last].toFixed(3)}${stepMs > 0 ? ` · ${stepMs.toFixed(0)} ms a step` : ''}`;
    const what: Record<State, string> = {
      idle: 'Press Start to train.',
      starting: 'starting…',
      running: 'training',
      pausing: 'pausing after this slice…',
      paused: 'paused',
      done: 'done',
      failed: 'stopped by an error',
    };
    status.textContent = where ? `${where} · ${what[s]}` : what[s];
  };

  const drawCurve = () => {
    showFigure(figLoss, {
      id: 'train-loss',
      view: 'Train',
      title: 'training and validation loss',
      svg: lineChartSvg({
        series: [
          { label: 'train loss (moving average)', values: curve.smoothed },
          { label: 'validation loss', values: curve.val },
        ],
        x: curve.x,
        xLabel: 'step',
        yLabel: 'nats per character',
        height: 200,
      }),
    });
  };

  const show = (r: TrainSlice) => {
    if (r.steps.length > 0 || curve.x.length === 0) {
      curve.x.push(r.step);
      curve.smoothed.push(r.smoothed);
      curve.val.push(r.valLoss);
      if (r.steps.length > 0) stepMs = r.ms / r.steps.length;
      drawCurve();
    }
    promptOut.textContent = r.sample.prompt;
    continuation.textContent = r.sample.continuation;
    void panel.show(gptMaps(r.sample));
    root.dataset.step = String(r.step);
    root.dataset.slices = String(Number(root.dataset.slices ?? 0) + 1);
  };

  const fail = (e: unknown) => {
    // A cancel, or another backend chosen in the switch, ends the model worker and the run with it.
    err.textContent =
      (e as Error).name === 'Cancelled'
        ? 'the run ended: the model worker was restarted (a cancel, or another backend): press Start'
        : (e as Error).message;
    err.hidden = false;
    setState('failed');
  };

  /** A slice of `ms` of training (none: 0), scored and sampled. */
  const slice = (ms: number) => {
    const n = Number(maxTokens.value);
    return runner.call('trainSteps', { ms, prompt: prompt.value, maxTokens: Number.isInteger(n) && n >= 1 ? n : 40 });
  };

  /** Slices one after another while the state is 'running'; ends when paused, done or failed. */
  const runLoop = async () => {
    while (state === 'running') {
      let r: TrainSlice;
      try {
        r = await slice(SLICE_MS);
      } catch (e) {
        fail(e);
        return;
      }
      show(r);
      if (r.done) setState('done');
      // The state may have changed while the slice ran (Pause).
      else if ((state as State) === 'pausing') setState('paused');
      else setState(state);
    }
  };
  const go = () => {
    setState('running');
    loop = runLoop().finally(() => {
      loop = null;
    });
  };

  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    if (start.disabled) return;
    err.hidden = true;
    saved.textContent = '';
    if (state === 'running') setState('pausing');
    await loop;
    setState('starting');
    const settings: TrainSettings = {
      text: text.value,
      nLayer: Number(layers.value),
      nHead: Number(heads.value),
      nEmbd: Number(width.value),
      blockSize: Number(context.value),
      batchSize: Number(batch.value),
      lr: Number(lr.value),
      steps: Number(steps.value),
      warmup: Number(warmup.value),
      seed: Number(seed.value),
    };
    try {
      const s = await runner.call('trainStart', settings);
      planned = settings.steps;
      curve.x = [];
      curve.smoothed = [];
      curve.val = [];
      stepMs = 0;
      root.dataset.slices = '0';
      saved.textContent =
        `${s.parameters.toLocaleString('en')} parameters, ${s.vocabSize} characters, ` +
        `${s.trainLines} lines (${s.trainTokens.toLocaleString('en')} tokens) to train on, ` +
        `${s.valLines} (${s.valTokens.toLocaleString('en')}) to validate.`;
    } catch (x) {
      fail(x);
      return;
    }
    go();
  });
  pause.addEventListener('click', () => {
    if (state === 'running') setState(loop ? 'pausing' : 'paused');
  });
  resume.addEventListener('click', () => {
    if (state === 'paused') go();
  });
  sampleNow.addEventListener('click', async () => {
    if (state !== 'paused' && state !== 'done') return;
    err.hidden = true;
    try {
      show(await slice(0));
    } catch (x) {
      err.textContent = (x as Error).message;
      err.hidden = false;
    }
  });
  save.addEventListener('click', async () => {
    err.hidden = true;
    try {
      const r = await runner.call('trainSave', { name: name.value });
      download(r.fileName, new Blob([r.bytes as Uint8Array<ArrayBuffer>], { type: 'application/zip' }));
      saved.textContent =
        `Saved ${r.fileName} at step ${r.step}: unzip it, then ` +
        `qkv generate --model ${name.value} --prompt "${prompt.value}" --temperature 0`;
      root.dataset.saved = String(r.step);
    } catch (x) {
      err.textContent = (x as Error).message;
      err.hidden = false;
    }
  });
  setState('idle');
}
