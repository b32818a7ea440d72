#!/usr/bin/env bash
# Device probe for WebGPU in Node on a lent GPU machine (records/webgpu-h100/README.md says how it was run).
# Expects beside it (carried as one ignored folder): node_modules/webgpu with dist/linux-x64/dawn.node(.xz),
# libvulkan.so.1 from Debian's libvulkan1, and node.xz (node 20) in case the machine has no node.
cd "$(dirname "$0")"
exec > >(tee "$OUT/probe2.txt") 2>&1
unxz_() { xz -dc "$1" 2>/dev/null || python3 -c "import lzma,sys;sys.stdout.buffer.write(lzma.open(sys.argv[1]).read())" "$1"; }
[ -f node_modules/webgpu/dist/linux-x64/dawn.node ] || unxz_ node_modules/webgpu/dist/linux-x64/dawn.node.xz > node_modules/webgpu/dist/linux-x64/dawn.node
NODE=$(command -v node || true)
if [ -z "$NODE" ] || ! "$NODE" -v | grep -q '^v2'; then unxz_ node.xz > node && chmod +x node && NODE=$PWD/node; fi
echo "== icd json"; cat /usr/share/vulkan/icd.d/nvidia_icd.json; ls -la /dev/nvidia* /dev/dri 2>&1
echo "== ldd GLX"; ldd /usr/local/nvidia/lib64/libGLX_nvidia.so.0 | grep -i 'not found'; ls /usr/local/nvidia/lib64 | head -60
probe() { echo "== try: $1"; timeout 60 "$NODE" ../bench/webgpu/gemm-node.mjs --sizes 256 2>&1 | tail -12; }
export LD_LIBRARY_PATH=$PWD:$LD_LIBRARY_PATH
unset VK_ICD_FILENAMES
probe "system ICD json, carried libvulkan"
printf '{"file_format_version":"1.0.0","ICD":{"library_path":"libEGL_nvidia.so.0","api_version":"1.3.0"}}\n' > egl_icd.json
VK_ICD_FILENAMES=$PWD/egl_icd.json probe "libEGL_nvidia.so.0 ICD"
ok=""
for v in "" "$PWD/egl_icd.json"; do
  if VK_ICD_FILENAMES=$v timeout 60 "$NODE" ../bench/webgpu/gemm-node.mjs --sizes 256 >/dev/null 2>&1; then ok="$v"; echo "== working: VK_ICD_FILENAMES='$v'"; VK_ICD_FILENAMES=$v timeout 200 "$NODE" ../bench/webgpu/gemm-node.mjs --json "$OUT/gemm.json"; break; fi
done
[ -n "$ok$( [ -s $OUT/gemm.json ] && echo y)" ] || { echo "== loader debug"; VK_LOADER_DEBUG=all timeout 30 "$NODE" ../bench/webgpu/gemm-node.mjs --sizes 256 2>&1 | grep -iE 'error|fail|nvidia|driver' | head -40; }
