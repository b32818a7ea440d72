#!/usr/bin/env bash
# Run python/qkv_torch/sweep.py jobs side by side on one GPU (CUDA MPS when it starts), then pack
# their logs into $OUT/sweep.tar.gz. Stops the jobs at the deadline and packs what they logged.
#   scripts/sweep-gpu.sh JOBS.jsonl PARALLEL DEADLINE_SECONDS REFS
set -u
jobs=$1; par=$2; deadline=$3; refs=$4
out=${OUT:-/tmp/sweep-out}/logs
mkdir -p "$out"
nvidia-cuda-mps-control -d 2>/dev/null && echo "MPS on" || echo "MPS not started"
export OMP_NUM_THREADS=1 PYTHONUNBUFFERED=1
start=$(date +%s)
export END=$(( start + deadline )) SWEEP_OUT=$out SWEEP_REFS=$refs
# Each job gets the time left to the deadline; a job that has not started by then does not start.
grep -v '^\s*$' "$jobs" | xargs -d '\n' -P "$par" -I{} bash -c 'left=$(( END - $(date +%s) )); [ $left -gt 5 ] && timeout $left python3 python/qkv_torch/sweep.py --out "$SWEEP_OUT" --refs "$SWEEP_REFS" --job "$1"' _ {} 2>&1 | grep -E 'step [0-9]*000 |average|rror|Trace'
echo "sweep: $(( $(date +%s) - start )) s"
nvidia-smi --query-gpu=name,utilization.gpu,memory.used --format=csv
(cd "$out" && tar czf ../sweep.tar.gz *.jsonl) && rm -rf "$out"
ls -la "${OUT:-/tmp/sweep-out}"
