#!/usr/bin/env bash
# The GPU check of python/qkv_torch/train.py, on a machine with CUDA and PyTorch (no Node needed):
# first, where Node is: `npx tsx scripts/gpu-check/fixture.ts gpu-fx`; then there:
#   bash scripts/gpu-check/run.sh gpu-fx [STEPS]
# Writes to $OUT (default /tmp/gpu-check-out): check.txt, gpu-check.json, nvidia-smi.txt and
# fp32-run.tgz (the fp32 CUDA run folder, for `qkv train --resume` back on the CPU).
set -o pipefail
fx=${1:?fixture folder}; steps=${2:-600}
out=${OUT:-/tmp/gpu-check-out}; work=$(mktemp -d)
mkdir -p "$out"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$out/nvidia-smi.txt"
python3 scripts/gpu-check/check.py "$fx" "$work" --device cuda --steps "$steps" 2>&1 | tee "$out/check.txt"
rc=$?
cp "$work/gpu-check.json" "$out/" 2>/dev/null
tar czf "$out/fp32-run.tgz" -C "$work" fp32 2>/dev/null
exit $rc
