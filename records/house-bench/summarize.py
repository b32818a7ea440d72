# Summarises ab.log: for each workload, the median over rounds of (new ms / old ms) in the same round.
# Run from the repository root: /usr/bin/python3 records/house-bench/summarize.py
import json, statistics as st
runs = {}
for line in open('records/house-bench/ab.log'):
    i, who, *_ , js = line.split(' ', 5)[0], line.split(' ')[1], line.split(' ', 5)[5]
    runs.setdefault(int(i), {})[who] = json.loads(js)
for key in ['train', 'small', 'fwd1']:
    r = [runs[i]['main'][key] / runs[i]['old'][key] for i in sorted(runs)]
    print(f"{key}: median of {len(r)} paired ratios new/old {st.median(r):.2f} (range {min(r):.2f}-{max(r):.2f})")
