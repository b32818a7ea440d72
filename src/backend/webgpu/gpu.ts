/**
 * Where a WebGPU device comes from: `navigator.gpu` in browsers (and Deno), the npm package `webgpu` (Dawn)
 * in Node, which qkv does not depend on: a Node user who wants the GPU installs it (`npm install webgpu`).
 * Without a GPU, Dawn runs on a CPU implementation of Vulkan where one is installed (SwiftShader, as Debian's
 * chromium ships it: `VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json`): correct, and slow.
 */
/// <reference types="@webgpu/types" />

/** A GPU device and what qkv needs to know of its adapter. */
export interface Acquired {
  device: GPUDevice;
  /** The adapter's description (vendor, architecture, device), for backendInfo(). */
  adapter: string;
}

interface NodeProcess {
  versions?: { node?: string };
}

/** The GPU object of this environment: navigator.gpu, or Dawn's in Node; null with the reason. */
async function gpuObject(): Promise<{ gpu: GPU } | { why: string }> {
  const nav = (globalThis as { navigator?: { gpu?: GPU } }).navigator;
  if (nav?.gpu) return { gpu: nav.gpu };
  if ((globalThis as { process?: NodeProcess }).process?.versions?.node === undefined)
    return { why: 'this browser has no WebGPU (navigator.gpu is missing)' };
  // A variable specifier: bundlers must not try to include the optional Node package.
  const pkg = 'webgpu';
  let mod: { create(options: string[]): GPU; globals: object };
  try {
    mod = (await import(/* @vite-ignore */ pkg)) as typeof mod;
  } catch {
    return { why: 'in Node, WebGPU needs the npm package `webgpu` (Dawn): npm install webgpu' };
  }
  // Dawn's constants (GPUBufferUsage, GPUMapMode, ...) are globals in browsers; give Node the same.
  for (const [k, v] of Object.entries(mod.globals))
    if (!(k in globalThis)) (globalThis as Record<string, unknown>)[k] = v;
  // Held for the life of the process: Dawn's event loop hook uses the instance, and a collected instance
  // crashes the process (use after free in InstanceBase::ProcessEvents).
  dawn ??= mod.create([]);
  return { gpu: dawn };
}

let dawn: GPU | undefined;

/** A device with the adapter's own limits for buffer sizes and workgroup memory (not the defaults). */
export async function acquireDevice(): Promise<Acquired | { why: string }> {
  const got = await gpuObject();
  if ('why' in got) return got;
  const adapter = await got.gpu.requestAdapter({ powerPreference: 'high-performance' });
  if (!adapter)
    return {
      why:
        'no WebGPU adapter (in Node without a GPU: apt-get install libvulkan1 chromium and ' +
        'VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json)',
    };
  const l = adapter.limits;
  const device = await adapter.requestDevice({
    requiredLimits: {
      maxBufferSize: l.maxBufferSize,
      maxStorageBufferBindingSize: l.maxStorageBufferBindingSize,
      maxComputeWorkgroupStorageSize: l.maxComputeWorkgroupStorageSize,
      maxComputeInvocationsPerWorkgroup: l.maxComputeInvocationsPerWorkgroup,
      maxComputeWorkgroupSizeX: l.maxComputeWorkgroupSizeX,
      maxComputeWorkgroupSizeY: l.maxComputeWorkgroupSizeY,
      maxStorageBuffersPerShaderStage: l.maxStorageBuffersPerShaderStage,
    },
  });
  const info = adapter.info;
  const adapterName =
    [info?.vendor, info?.architecture, info?.device, info?.description].filter((s) => s).join(' ') || 'unknown';
  return { device, adapter: adapterName };
}
