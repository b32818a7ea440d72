#!/usr/bin/env bash
# qkv's WebGPU benchmark and WebGPU tests on a lent GPU machine (records/webgpu-h100/README.md has the results
# and the Vulkan recipe). Two halves:
#   bench/webgpu/device-bench.sh build   here: bundles bench/webgpu/node-bench.ts (and ONNX Runtime Web's
#        WebGPU wasm, xz'd) into .gpu/nb/ and the WebGPU tests into .gpu/t/; .gpu/ (gitignored) also holds
#        node.xz (Node 20), libvulkan.so.1 (Debian's libvulkan1) and node_modules/webgpu (dawn.node.xz).
#   bench/webgpu/device-bench.sh run     there (device tool, carry .gpu): the benchmark per workload with
#        PyTorch CUDA beside it, the bundled WebGPU tests, real sacreBLEU on every BLEU claim; all into $OUT.
set -u
cd "$(dirname "$0")/../.."
if [ "${1:-}" = build ]; then
  set -e
  banner="import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);"
  mkdir -p .gpu/nb .gpu/t
  npx esbuild bench/webgpu/node-bench.ts src/backend/wasm/pool-worker.ts --bundle --platform=node --format=esm \
    --outdir=.gpu/nb --external:webgpu --entry-names='[name]' --minify-whitespace --minify-syntax \
    --banner:js="$banner" --log-level=warning
  cp src/backend/wasm/*.wasm node_modules/onnxruntime-web/dist/ort-wasm-simd-threaded.asyncify.mjs .gpu/nb/
  [ -f .gpu/nb/ort.wasm.xz ] || xz -T2 -9 -c node_modules/onnxruntime-web/dist/ort-wasm-simd-threaded.asyncify.wasm \
    > .gpu/nb/ort.wasm.xz
  rm -f .gpu/nb/ort-wasm-simd-threaded.asyncify.wasm .gpu/node_modules/webgpu/dist/linux-x64/dawn.node
  { echo "import '../../test/helpers/backend-ready.ts';"
    for f in test/backend/webgpu-*.once.test.ts test/parity.test.ts test/webgpu/*.test.ts; do echo "import '../../$f';"; done
  } > .gpu/t/entry.ts
  npx esbuild .gpu/t/entry.ts --bundle --platform=node --format=esm --outfile=.gpu/t/gpu-all.test.js \
    --external:webgpu --minify-whitespace --minify-syntax --banner:js="$banner" --log-level=warning
  du -sh .gpu; exit 0
fi
[ "${1:-}" = run ] || { echo "usage: $0 build|run" >&2; exit 2; }
G=$PWD/.gpu
unxz_() { xz -dc "$1" 2>/dev/null || python3 -c "import lzma,sys;sys.stdout.buffer.write(lzma.open(sys.argv[1]).read())" "$1"; }
unxz_ $G/node_modules/webgpu/dist/linux-x64/dawn.node.xz > $G/node_modules/webgpu/dist/linux-x64/dawn.node
unxz_ $G/nb/ort.wasm.xz > $G/nb/ort-wasm-simd-threaded.asyncify.wasm
NODE=$(command -v node || true)
if [ -z "$NODE" ] || ! "$NODE" -v | grep -q '^v2'; then unxz_ $G/node.xz > $G/node && chmod +x $G/node && NODE=$G/node; fi
export LD_LIBRARY_PATH=$G:${LD_LIBRARY_PATH:-}
printf '{"file_format_version":"1.0.0","ICD":{"library_path":"libEGL_nvidia.so.0","api_version":"1.3.0"}}\n' > $G/icd.json
export VK_ICD_FILENAMES=$G/icd.json
{ nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv; "$NODE" -v; python3 -c \
  'import torch;print("torch",torch.__version__,torch.cuda.get_device_name(0))'; nproc; } > $OUT/machine.txt 2>&1
# sacreBLEU on every BLEU claim's files (seconds), first: it needs no GPU.
# Eight files come back: machine.txt, all.log, sacrebleu.json, bench-{gemm,mha,train,gpt}.md, tests.log.
[ -n "${NO_BLEU:-}" ] || timeout 120 python3 scripts/sacrebleu-check.py $OUT > $OUT/all.log 2>&1
for wl in ${WORKLOADS:-gemm:120 mha:60 train:240 gpt:100}; do
  w=${wl%:*}; extra=(); [ $w = gemm ] && extra=(--gemm 256,512,1024,2048)
  timeout ${wl#*:} "$NODE" $G/nb/node-bench.js --only $w "${extra[@]}" --torch python3 --out $OUT/bench-$w.md \
    >> $OUT/all.log 2>&1; rc=$?; echo "bench $w: exit $rc" >> $OUT/machine.txt
  # A failure of the wasm reference on this many cores: once more on two threads, as on the dev machines.
  [ $rc = 0 ] || { QKV_THREADS=2 timeout ${wl#*:} "$NODE" $G/nb/node-bench.js --only $w "${extra[@]}" --torch python3 \
    --out $OUT/bench-$w-t2.md >> $OUT/all.log 2>&1; echo "bench $w (QKV_THREADS=2): exit $?" >> $OUT/machine.txt; }
done
# The test bundle resolves the npm package `webgpu` from the repository's node_modules.
# and test/helpers asks for Debian's libvulkan.so.1 where Debian puts it (a bare machine: the carried one).
[ -e /usr/lib/x86_64-linux-gnu/libvulkan.so.1 ] || cp $G/libvulkan.so.1 /usr/lib/x86_64-linux-gnu/
mkdir -p node_modules && for m in $G/node_modules/*; do ln -sfn $m node_modules/; done
cp $G/t/gpu-all.test.js test/gpu-all.test.js
QKV_BACKEND=webgpu timeout 150 "$NODE" --test test/gpu-all.test.js > $OUT/tests.log 2>&1
echo "tests: exit $?" >> $OUT/machine.txt
cat $OUT/machine.txt; grep -h "^| \|sacreBLEU\|fail\|Error" $OUT/bench-*.md $OUT/all.log | head -60
grep -E "^# (tests|pass|fail)|^not ok" $OUT/tests.log | head -30
