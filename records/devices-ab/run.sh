#!/bin/bash
# Alternating A/B: before = 9c871fa (session start), after = main HEAD. A fresh process each run.
for r in 1 2 3 4 5 6 7; do
  for side in before after; do
    dir=/work/ab-before; [ $side = after ] && dir=/tmp/ab/after
    cd $dir
    s=$(AB_CLOCK=cpu timeout 300 npx tsx bench/ab-step.ts 2>/dev/null | tail -1)
    d=$(AB_CLOCK=cpu timeout 300 npx tsx bench/ab-decode.ts 2>/dev/null | tail -1)
    echo "{\"round\":$r,\"side\":\"$side\",\"step\":$s,\"decode\":$d}" >> /tmp/ab/cpu.jsonl
  done
done
echo done >> /tmp/ab/cpu.jsonl
