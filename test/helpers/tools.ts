/**
 * External tools some tests need: Debian's Chromium, PyTorch, ONNX and NumPy under /usr/bin/python3.
 *
 * `toolSkip(tool)` returns false when the tool is there, so the test runs. When it is missing:
 * under CI (CI set to anything but empty, 0 or false: CI=true, CI=1, CI=yes all count) or
 * QKV_REQUIRE_TOOLS=1 it returns false too, and the test's first use of the
 * tool fails with `missingToolMessage(tool)`: a missing tool must never let CI pass silently; on a
 * developer's machine it returns the skip reason, which node's runner prints with the test name.
 * Either way the message says what to install.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export type Tool = 'chromium' | 'torch' | 'onnx' | 'numpy' | 'vulkan' | 'transformers';

export const CHROMIUM = '/usr/bin/chromium';
export const PYTHON = '/usr/bin/python3';
/**
 * The reference libraries' interpreter (transformers 5, torch 2, PEFT, sacreBLEU, tokenizers): the virtual
 * environment scripts/ref-env.sh builds from the machine's local wheel index (python/ref-requirements.txt).
 */
export const REF_PYTHON = fileURLToPath(new URL('../../.venv-ref/bin/python', import.meta.url));
/** The Vulkan loader Dawn (the npm package `webgpu`) needs; with Chromium's SwiftShader it runs WebGPU on the CPU. */
export const VULKAN = '/usr/lib/x86_64-linux-gnu/libvulkan.so.1';

const INSTALL: Record<Tool, string> = {
  chromium: 'apt-get install -y chromium',
  torch: 'apt-get install -y python3-torch libopenblas0-pthread',
  onnx: 'apt-get install -y python3-onnx',
  numpy: 'apt-get install -y python3-numpy',
  vulkan: 'apt-get install -y libvulkan1 chromium',
  transformers: 'bash scripts/ref-env.sh',
};

const cache = new Map<Tool, boolean>();

/** Whether the tool is installed (Python modules are imported once to find out). */
export function hasTool(tool: Tool): boolean {
  let has = cache.get(tool);
  if (has === undefined) {
    if (tool === 'chromium') {
      has = existsSync(CHROMIUM);
    } else if (tool === 'vulkan') {
      has = existsSync(VULKAN);
    } else if (tool === 'transformers') {
      const r = existsSync(REF_PYTHON)
        ? spawnSync(REF_PYTHON, ['-c', 'import transformers, torch, peft, sacrebleu'], { encoding: 'utf8' })
        : null;
      has = r !== null && r.status === 0;
    } else {
      const r = existsSync(PYTHON) ? spawnSync(PYTHON, ['-c', `import ${tool}`], { encoding: 'utf8' }) : null;
      has = r !== null && r.status === 0;
    }
    cache.set(tool, has);
  }
  return has;
}

export function missingToolMessage(tool: Tool): string {
  const what =
    tool === 'chromium'
      ? CHROMIUM
      : tool === 'vulkan'
        ? VULKAN
        : tool === 'transformers'
          ? `${REF_PYTHON} (transformers, torch, peft, sacrebleu)`
          : `${PYTHON} -c 'import ${tool}'`;
  return `${what} is not available: install it with \`${INSTALL[tool]}\` (.ci/run does this)`;
}

/** Whether an environment flag is on: set to anything but empty, 0 or false (any case). */
export function truthy(value: string | undefined): boolean {
  return value !== undefined && !/^(|0|false|no|off)$/i.test(value.trim());
}

/** Tests must fail, not skip, when a tool is missing under any truthy CI or QKV_REQUIRE_TOOLS. */
export function toolsRequired(): boolean {
  return truthy(process.env.CI) || truthy(process.env.QKV_REQUIRE_TOOLS);
}

/** The `skip` option for node:test: false when the tool is there or required; otherwise the reason. */
export function toolSkip(...tools: Tool[]): false | string {
  const missing = tools.filter((t) => !hasTool(t));
  if (missing.length === 0 || toolsRequired()) return false;
  return missing.map(missingToolMessage).join('; ');
}

/**
 * The `skip` option for a test that needs a feature of this machine or engine (the wasm module, a
 * second core): false when `missing` is null (the feature is there) or under CI, where the test
 * must then fail by calling requireFeature; otherwise the reason, which node's runner prints.
 */
export function featureSkip(feature: string, missing: string | null): false | string {
  if (missing === null || toolsRequired()) return false;
  return `${feature}: ${missing}`;
}

/** Throws naming the feature and why it is missing (call it first in a test given featureSkip). */
export function requireFeature(feature: string, missing: string | null): void {
  if (missing !== null) throw new Error(`${feature}: ${missing}`);
}

/** Throws the install message when a tool is missing (call it first in a test that needs the tool). */
export function requireTool(...tools: Tool[]): void {
  const missing = tools.filter((t) => !hasTool(t));
  if (missing.length > 0) throw new Error(missing.map(missingToolMessage).join('; '));
}
