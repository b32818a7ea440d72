/**
 * qkv in a browser app: load the wasm kernels, open the translation model folder served under
 * models/, translate a few fixed sentences and whatever is typed into the box, and say which
 * backend runs (backendInfo()).
 */
import { backendInfo, loadWasmKernels, pipeline } from 'qkv';

const EXAMPLES = ['A man in an orange hat starring at something.', 'Two dogs play in the snow.'];

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const status = $<HTMLParagraphElement>('status');

async function main(): Promise<void> {
  // The kernels come from the .wasm files the bundler emitted next to the app's scripts. Without
  // cross-origin isolation (no COOP/COEP headers) they run on one thread; backendInfo() says so.
  await loadWasmKernels();
  const info = backendInfo();
  const backend = $<HTMLParagraphElement>('backend');
  backend.textContent = `Backend: ${info.backend}${info.wasmVariant ? ` (${info.wasmVariant})` : ''}, ${info.threads} thread${info.threads === 1 ? '' : 's'}: ${info.reason}`;
  backend.dataset.info = JSON.stringify(info);

  const translate = await pipeline('translation', new URL('models/multi30k-en-de/', document.baseURI).href);

  const list = $<HTMLOListElement>('examples');
  const translations = await translate(EXAMPLES);
  EXAMPLES.forEach((source, i) => {
    const li = document.createElement('li');
    li.dataset.source = source;
    li.dataset.translation = translations[i];
    li.innerHTML = '<span></span><br><span class="de"></span>';
    li.children[0].textContent = source;
    li.children[2].textContent = translations[i];
    list.append(li);
  });

  const form = $<HTMLFormElement>('form');
  const input = $<HTMLTextAreaElement>('source');
  const button = $<HTMLButtonElement>('translate');
  const output = $<HTMLParagraphElement>('output');
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const source = input.value;
    button.disabled = true;
    delete output.dataset.source;
    output.textContent = '…';
    try {
      output.textContent = await translate(source);
      output.dataset.source = source;
    } catch (err) {
      output.textContent = `Error: ${(err as Error).message}`;
    } finally {
      button.disabled = false;
    }
  });
  button.disabled = false;
  status.textContent = 'Ready.';
  document.body.dataset.state = 'ready';
}

main().catch((err: unknown) => {
  status.textContent = `Error: ${err instanceof Error ? err.message : String(err)}`;
  document.body.dataset.state = 'error';
  console.error(err);
});
