/**
 * What a big folder will take in the page, said before it is loaded (issue 63, point 4): from config.json alone,
 * the weights' bytes in fp32 and in the dtype the page loads with (fp32, q8 or q4: src/models/gpt-memory.ts, exact
 * to the quantized state dict), the most the load holds at once (the folder is read in float32, then quantized),
 * and what the tab can hold: WebAssembly memory's 4 GiB (wasm32) with the wasm backend, a few GB with js, and where
 * the browser tells them, the device's memory (navigator.deviceMemory, in GiB, a lower bound Chromium caps at 8)
 * and the JavaScript heap's limit (performance.memory.jsHeapSizeLimit, Chromium's). A folder over the limit is
 * refused before any weight is read, in one line; one over half the device's memory loads with a warning.
 */
import type { GPTConfig } from '../../src/models/gpt-config.ts';
import { gptParameterCount } from '../../src/models/gpt.ts';
import { gptRunBytes, gptWeightBytes } from '../../src/models/gpt-memory.ts';
import { gptConfigFromHf } from '../../src/models/hf/gpt2.ts';
import { decoderConfigFromHf, HF_DECODER_TYPES } from '../../src/models/hf/llama.ts';
import { DTYPES } from '../../src/pipelines/options.ts';

/** What the page can hold: wasm32 memory is 4 GiB; keep room for activations, the KV cache and the page. */
export const WASM_LIMIT_BYTES = 4 * 2 ** 30 - 256 * 2 ** 20;
/** The js backend keeps each tensor in its own ArrayBuffer; past a few GB the tab runs out. */
export const JS_LIMIT_BYTES = 3 * 2 ** 30;

/** The dtypes the page loads a decoder in (the pipelines' names: q8 is int8). */
export const PAGE_DTYPES = ['fp32', 'q8', 'q4'] as const;
export type PageDType = (typeof PAGE_DTYPES)[number];

/** What the browser tells of its memory (null: not told). */
export interface PageMemory {
  /** navigator.deviceMemory: the device's memory in GiB (rounded down, capped at 8 by Chromium). */
  deviceMemoryGiB: number | null;
  /** performance.memory.jsHeapSizeLimit (Chromium): the JavaScript heap's limit in bytes. */
  jsHeapLimit: number | null;
}

/** What the page reads of its memory, on the page's main thread (performance.memory is not a worker's). */
export function pageMemory(): PageMemory {
  const dm = (navigator as { deviceMemory?: unknown }).deviceMemory;
  const pm = (performance as { memory?: { jsHeapSizeLimit?: unknown } }).memory?.jsHeapSizeLimit;
  return {
    deviceMemoryGiB: typeof dm === 'number' && dm > 0 ? dm : null,
    jsHeapLimit: typeof pm === 'number' && pm > 0 ? pm : null,
  };
}

/** A folder's memory in the page, before it is loaded. */
export interface MemoryPlan {
  parameters: number;
  dtype: PageDType;
  /** Its weights in fp32, and as held once loaded in `dtype`. */
  fp32: number;
  held: number;
  /** The most the load holds at once: the float32 weights, plus their quantized copy while it is made. */
  peak: number;
  /** What 512 tokens add: the KV cache, and the attention maps the views draw. */
  per512: { kvCache: number; maps: number };
  /** The tab's limit for it, and what sets that limit. */
  limit: number;
  limitWhy: string;
  /** A line when the load takes over half the device's memory (it may fail or slow the machine). */
  warning: string | null;
}

export function mb(bytes: number): string {
  return `${(bytes / 1e6).toFixed(bytes < 1e7 ? 1 : 0)} MB`;
}

/** The GPT config of a Hugging Face decoder's config.json (GPT-2, or a Llama, Qwen2 or Mistral one). */
export function hfDecoderConfig(config: unknown): GPTConfig {
  const type = (config as { model_type?: unknown } | null)?.model_type;
  return (HF_DECODER_TYPES as readonly unknown[]).includes(type)
    ? decoderConfigFromHf(config)
    : gptConfigFromHf(config);
}

/** The plan of a decoder of config `cfg` in `dtype` on `backend`, with what the browser told of its memory. */
export function memoryPlan(cfg: GPTConfig, dtype: PageDType, backend: string, page: PageMemory): MemoryPlan {
  const w = gptWeightBytes(cfg, DTYPES[dtype]);
  const peak = dtype === 'fp32' ? w.fp32 : w.fp32 + w.held;
  let limit = backend === 'wasm' ? WASM_LIMIT_BYTES : JS_LIMIT_BYTES;
  let limitWhy =
    backend === 'wasm' ? 'with the wasm backend: WebAssembly memory is 4 GiB at most' : `with the ${backend} backend`;
  if (backend !== 'wasm' && page.jsHeapLimit !== null && page.jsHeapLimit < limit) {
    limit = page.jsHeapLimit;
    limitWhy = `with the ${backend} backend: this browser's JavaScript heap is limited to ${mb(limit)}`;
  }
  const device = page.deviceMemoryGiB === null ? null : page.deviceMemoryGiB * 2 ** 30;
  if (device !== null && device < limit) {
    limit = device;
    limitWhy = `on this device, which reports ${page.deviceMemoryGiB} GiB of memory`;
  }
  const warning =
    device !== null && peak > device / 2 && peak <= limit
      ? `loading it takes ${mb(peak)}, over half of the ${page.deviceMemoryGiB} GiB this device reports: ` +
        'the tab may run out or slow the machine'
      : null;
  return {
    parameters: gptParameterCount(cfg),
    dtype,
    fp32: w.fp32,
    held: w.held,
    peak,
    per512: gptRunBytes(cfg, Math.min(512, cfg.blockSize)),
    limit,
    limitWhy,
    warning,
  };
}

/** One line: `134,515,008 parameters: 538 MB in fp32, 86 MB in q4 once loaded (624 MB while loading)`. */
export function memoryLine(p: MemoryPlan): string {
  return (
    `${p.parameters.toLocaleString('en')} parameters: ${mb(p.fp32)} in fp32` +
    (p.dtype === 'fp32' ? '' : `, ${mb(p.held)} in ${p.dtype} once loaded (${mb(p.peak)} while loading)`)
  );
}

/**
 * The plan of a Hugging Face decoder's config.json (named `file`) in `dtype`, or the one-line refusal of a folder
 * the tab cannot hold, before any weight is read.
 */
export function checkPageLimit(
  config: unknown,
  backend: string,
  file: string,
  dtype: PageDType = 'fp32',
  page: PageMemory = { deviceMemoryGiB: null, jsHeapLimit: null },
): MemoryPlan {
  const cfg = hfDecoderConfig(config);
  if (dtype !== 'fp32' && dtype !== 'q8' && dtype !== 'q4')
    throw new Error(`dtype: expected one of ${PAGE_DTYPES.join(', ')}, got '${String(dtype)}'`);
  const p = memoryPlan(cfg, dtype, backend, page);
  if (p.peak <= p.limit) return p;
  // In another dtype it may fit: say which.
  const fits = PAGE_DTYPES.filter((d) => d !== dtype && memoryPlan(cfg, d, backend, page).peak <= p.limit);
  const gpt2 = cfg.norm !== 'rms' && cfg.positions === 'learned';
  throw new Error(
    `${file}: this model has ${p.parameters.toLocaleString('en')} parameters, ${mb(p.fp32)} in fp32` +
      (dtype === 'fp32' ? '' : ` (${mb(p.held)} in ${dtype}, ${mb(p.peak)} while loading)`) +
      `, more than the page can hold (${mb(p.limit)} ${p.limitWhy})` +
      (fits.length > 0 ? `; it fits in ${fits.join(' or ')}: choose it in Weights` : '') +
      (gpt2 ? '; gpt2, distilgpt2, gpt2-medium and gpt2-large fit' : ''),
  );
}

/** What a loaded decoder holds, as the page says it. */
export interface HeldMemory {
  /** The dtype its weights are held in (a qkv GPT or an encoder: fp32 whatever was chosen). */
  dtype: PageDType;
  /** Its weights' bytes as held (each tensor by its dtype), and in fp32. */
  weights: number;
  fp32: number;
  /** The WebAssembly memory the worker holds now (null: not the wasm backend). */
  wasmBytes: number | null;
  /** The plan's warning (over half the device's memory), or null. */
  warning: string | null;
}

/** One sentence for the model line: `Weights held in q4: 86 MB (538 MB in fp32); WebAssembly memory: 700 MB.` */
export function heldLine(m: HeldMemory): string {
  return (
    `Weights held in ${m.dtype}: ${mb(m.weights)}` +
    (m.dtype === 'fp32' ? '' : ` (${mb(m.fp32)} in fp32)`) +
    (m.wasmBytes !== null ? `; WebAssembly memory: ${mb(m.wasmBytes)}` : '') +
    '.' +
    (m.warning ? ` Warning: ${m.warning}.` : '')
  );
}
