#!/usr/bin/env bash
# Builds .venv-ref/ (the reference libraries of python/ref-requirements.txt: transformers, torch 2.x, PEFT,
# sacreBLEU, tokenizers) from this machine's local wheel index, the one `pip config list` names as
# global.extra-index-url (and global.find-links). Never downloads: where no local index is configured it says so
# in one line and exits 1. Does nothing when .venv-ref/ already holds exactly the pinned versions.
# Usage: bash scripts/ref-env.sh      (from the repository root; .ci/run calls it)
set -euo pipefail
cd "$(dirname "$0")/.."
req=python/ref-requirements.txt
stamp=.venv-ref/.requirements
if [ -x .venv-ref/bin/python ] && [ -f "$stamp" ] && cmp -s "$req" "$stamp"; then exit 0; fi
indexes=$(pip config get global.extra-index-url 2>/dev/null || true)
links=$(pip config get global.find-links 2>/dev/null || true)
local=()
for u in $indexes; do case "$u" in file://*) local+=("$u") ;; esac; done
if [ ${#local[@]} -eq 0 ]; then
  echo "scripts/ref-env.sh: no local wheel index in 'pip config list' (global.extra-index-url file://...): the reference libraries (transformers, torch, peft, sacrebleu) cannot be installed on this machine" >&2
  exit 1
fi
args=(--index-url "${local[0]}")
for u in "${local[@]:1}"; do args+=(--extra-index-url "$u"); done
for l in $links; do args+=(--find-links "$l"); done
python=$(command -v python3.11 || command -v python3)
rm -rf .venv-ref
"$python" -m venv .venv-ref
# pip warns once per package that the second index lacks it: noise, not a problem.
.venv-ref/bin/pip install -q --disable-pip-version-check "${args[@]}" -r "$req" 2> >(grep -v 'is ignored: it is neither a file nor a directory' >&2)
cp "$req" "$stamp"
.venv-ref/bin/python -c 'import torch, transformers, peft, sacrebleu, tokenizers, sentencepiece; print("reference env: torch", torch.__version__, "transformers", transformers.__version__, "peft", peft.__version__, "sacrebleu", sacrebleu.__version__)'
