#!/bin/bash
# Alternating A/B, CPU clock: before = 9c871fa (before the devices change), after = main (session 38). Fresh process each run.
for r in 1 2 3 4 5 6 7; do
  order="before after"; [ $((r % 2)) = 0 ] && order="after before"
  for side in $order; do
    dir=/work/ab-before; [ $side = after ] && dir=/tmp/ab/after
    cd $dir
    s=$(AB_CLOCK=cpu timeout 300 npx tsx bench/ab-step.ts 2>/dev/null | tail -1)
    d=$(AB_CLOCK=cpu timeout 300 npx tsx bench/ab-decode.ts 2>/dev/null | tail -1)
    echo "{\"round\":$r,\"side\":\"$side\",\"load\":\"$(cut -d' ' -f1-3 /proc/loadavg)\",\"step\":$s,\"decode\":$d}" >> /tmp/ab/cpu.jsonl
  done
done
echo done >> /tmp/ab/cpu.jsonl
