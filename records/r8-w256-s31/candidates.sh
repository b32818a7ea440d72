#!/usr/bin/env bash
# The pre-registered decision for r8-w256 (records/README.md, "r8-w256 again (session 31)"),
# written down as commands before r8 ended, so it is carried out exactly once when it does.
# Run from the repository root after `qkv train --resume --out runs/r8-w256` has finished
# (patience 8 or step 12,000), or after a session stops it early for good (its kept model is
# then its best evaluation so far). Writes everything under runs/r8-decision/.
#
#   bash records/r8-w256-s31/candidates.sh
#
# Looks at val only. The test split is decoded by hand, once, and only if a candidate
# qualifies (p < 0.025 against the shipped pair's val output).
set -euo pipefail
qkv() { node dist/cli/main.js "$@"; }
out=runs/r8-decision
mkdir -p "$out"

# The members, all int8. Member 1 and member 2 are the shipped pair's own fp16 weights.
[ -d "$out/m1" ] || qkv export --model models/multi30k-en-de --no-ensemble --dtype int8 --out "$out/m1"
[ -d "$out/m2" ] || qkv export --model models/multi30k-en-de/member-2 --no-ensemble --dtype int8 --out "$out/m2"
[ -d "$out/r8" ] || qkv export --model runs/r8-w256 --dtype int8 --out "$out/r8"

# The baseline: the shipped pair's val output (41.02), decoded as shipped.
[ -f "$out/pair.val.de" ] || qkv eval --model models/multi30k-en-de --split val --output "$out/pair.val.de"

# r8 alone, for the record (no choice is made on it).
qkv eval --model "$out/r8" --split val --beam 1 --output "$out/r8.greedy.val.de"
qkv eval --model "$out/r8" --split val --beam 4 --alpha 0.6 --output "$out/r8.beam4.val.de"

# The two candidates, each decoded once: D = {m1, m2, r8}, E = {m1, r8}.
qkv eval --model "$out/m1" --no-ensemble --ensemble "$out/m2,$out/r8" --split val --beam 4 --alpha 0.6 \
  --output "$out/D.val.de"
qkv eval --model "$out/m1" --no-ensemble --ensemble "$out/r8" --split val --beam 4 --alpha 0.6 \
  --output "$out/E.val.de"

qkv bleu "$out"/{pair,r8.greedy,r8.beam4,D,E}.val.de --split val
qkv bleu "$out"/{pair,D,E}.val.de --split val --paired-bs
du -cb "$out/m1" "$out/m2" "$out/r8" | tail -1
