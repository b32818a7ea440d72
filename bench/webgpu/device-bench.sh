#!/usr/bin/env bash
# qkv's WebGPU benchmark and WebGPU tests on a lent GPU machine (records/webgpu-h100/README.md has the results
# and the Vulkan recipe). Two halves:
#   bench/webgpu/device-bench.sh build   here: bundles bench/webgpu/node-bench.ts (and ONNX Runtime Web's
#        WebGPU wasm, xz'd) into .gpu/nb/ and the WebGPU tests into .gpu/t/; .gpu/ (gitignored) also holds
#        node.xz (Node 20), libvulkan.so.1 (Debian's libvulkan1) and node_modules/webgpu (dawn.node.xz).
#        Only from a commit of main with no uncommitted changes (issue 61: the first H100 records said "commit
#        9840b3a with uncommitted changes", which no commit reproduces): the wasm builds are made again from
#        that commit's assembly/, and its hash goes into .gpu/COMMIT, which the results files then name.
#   bench/webgpu/device-bench.sh run     there (device tool, carry .gpu): first the division test (FDIV: WGSL's
#        `/` was an ULP off on the H100's driver) and, where it passes, the benchmark per workload with PyTorch
#        CUDA beside it; then the bundled WebGPU tests and real sacreBLEU on every BLEU claim; all into $OUT.
#        A failing division test stops the run before the benchmark: nothing new is quoted from it.
set -u
cd "$(dirname "$0")/../.."
if [ "${1:-}" = build ]; then
  set -e
  if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
    echo "device-bench build: the tree has uncommitted changes; a GPU record must name a commit that reproduces it:" >&2
    git status --short --untracked-files=no >&2
    exit 1
  fi
  if ! git merge-base --is-ancestor HEAD main 2>/dev/null; then
    echo "device-bench build: HEAD $(git rev-parse --short HEAD) is not a commit of main; build from main" >&2
    exit 1
  fi
  node scripts/build-wasm.mjs
  mkdir -p .gpu
  git rev-parse HEAD > .gpu/COMMIT
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
  # The division test alone (binary, binaryScalar and div bit for bit with js), run first there.
  printf "import '../../test/helpers/backend-ready.ts';\nimport '../../test/backend/webgpu-elementwise.once.test.ts';\n" \
    > .gpu/t/fdiv-entry.ts
  npx esbuild .gpu/t/fdiv-entry.ts --bundle --platform=node --format=esm --outfile=.gpu/t/fdiv.test.js \
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
# The results files name the commit the bundle was built from (bench/results.ts codeVersion), not this copy's.
[ -f $G/COMMIT ] || { echo "device-bench run: no .gpu/COMMIT: run \`$0 build\` (from a clean commit of main) first" >&2; exit 1; }
export QKV_BENCH_COMMIT=$(cat $G/COMMIT); echo "bundle: commit $QKV_BENCH_COMMIT" >> $OUT/machine.txt
# The test bundle resolves the npm package `webgpu` from the repository's node_modules.
# and test/helpers asks for Debian's libvulkan.so.1 where Debian puts it (a bare machine: the carried one).
[ -e /usr/lib/x86_64-linux-gnu/libvulkan.so.1 ] || cp $G/libvulkan.so.1 /usr/lib/x86_64-linux-gnu/
mkdir -p node_modules && for m in $G/node_modules/*; do ln -sfn $m node_modules/; done
# First the division test: the FDIV fix had not run on a GPU when the first H100 figures were taken.
cp $G/t/fdiv.test.js test/gpu-fdiv.test.js
QKV_BACKEND=webgpu timeout 90 "$NODE" --test test/gpu-fdiv.test.js > $OUT/fdiv.log 2>&1; rc=$?
echo "fdiv test: exit $rc" >> $OUT/machine.txt
if [ $rc != 0 ]; then
  cat $OUT/machine.txt; grep -E "^not ok|^# (pass|fail)|Error" $OUT/fdiv.log | head -20
  echo "device-bench run: the division test failed on this GPU: no benchmark, nothing new to quote" >&2; exit 1
fi
# sacreBLEU on every BLEU claim's files (seconds; it needs no GPU), then the benchmark.
# Nine files come back: machine.txt, fdiv.log, all.log, sacrebleu.json, bench-{gemm,mha,train,gpt}.md, tests.log.
[ -n "${NO_BLEU:-}" ] || timeout 120 python3 scripts/sacrebleu-check.py $OUT > $OUT/all.log 2>&1
for wl in ${WORKLOADS:-gemm:120 mha:60 train:240 gpt:100}; do
  w=${wl%:*}; extra=(); [ $w = gemm ] && extra=(--gemm 256,512,1024,2048)
  timeout ${wl#*:} "$NODE" $G/nb/node-bench.js --only $w "${extra[@]}" --torch python3 --out $OUT/bench-$w.md \
    >> $OUT/all.log 2>&1; rc=$?; echo "bench $w: exit $rc" >> $OUT/machine.txt
  # A failure of the wasm reference on this many cores: once more on two threads, as on the dev machines.
  [ $rc = 0 ] || { QKV_THREADS=2 timeout ${wl#*:} "$NODE" $G/nb/node-bench.js --only $w "${extra[@]}" --torch python3 \
    --out $OUT/bench-$w-t2.md >> $OUT/all.log 2>&1; echo "bench $w (QKV_THREADS=2): exit $?" >> $OUT/machine.txt; }
done
cp $G/t/gpu-all.test.js test/gpu-all.test.js
QKV_BACKEND=webgpu timeout 150 "$NODE" --test test/gpu-all.test.js > $OUT/tests.log 2>&1
echo "tests: exit $?" >> $OUT/machine.txt
cat $OUT/machine.txt; grep -h "^| \|sacreBLEU\|fail\|Error" $OUT/bench-*.md $OUT/all.log | head -60
grep -E "^# (tests|pass|fail)|^not ok" $OUT/tests.log | head -30
