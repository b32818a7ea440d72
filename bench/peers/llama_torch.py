"""PyTorch peer of bench/decoders.ts: transformers' LlamaForCausalLM on a folder bench/decoders.ts wrote (config.json
and model.safetensors holding qkv's random weights under Hugging Face's names), greedy with the KV cache.

  python llama_torch.py time FOLDER PROMPT_JSON NEW RUNS THREADS
      prints JSON {torch, transformers, ms, ids, logits}: the median milliseconds of RUNS timed
      generate(max_new_tokens=NEW, do_sample=False, min_new_tokens=NEW) after one warm-up, the tokens, and the
      logits of the prompt's last position (to check the weights mapped to the same model)
  python llama_torch.py peak FOLDER PROMPT_JSON NEW RUNS THREADS
      prints JSON {peak_mib}: VmHWM minus VmRSS before the model is loaded, after one generate
"""
import json
import re
import sys
import time

import torch
import transformers
from transformers import LlamaForCausalLM

mode, folder, prompt, new, runs, threads = sys.argv[1:7]
new, runs, threads = int(new), int(runs), int(threads)
torch.set_num_threads(threads)
ids = torch.tensor([json.loads(prompt)])
mask = torch.ones_like(ids)


def status(key):
    with open("/proc/self/status") as f:
        return int(re.search(key + r":\s+(\d+)", f.read()).group(1)) / 1024


def generate(m):
    with torch.no_grad():
        out = m.generate(input_ids=ids, attention_mask=mask, max_new_tokens=new, min_new_tokens=new, do_sample=False)
    return out[0, ids.shape[1]:].tolist()


base = status("VmRSS")
m = LlamaForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
if mode == "peak":
    generate(m)
    print(json.dumps({"peak_mib": status("VmHWM") - base}))
    sys.exit(0)
with torch.no_grad():
    logits = m(input_ids=ids, attention_mask=mask).logits[0, -1].tolist()
generate(m)
ts = []
for _ in range(runs):
    t = time.perf_counter()
    out = generate(m)
    ts.append((time.perf_counter() - t) * 1000)
print(json.dumps({"torch": torch.__version__, "transformers": transformers.__version__,
                  "attn": m.config._attn_implementation, "ms": sorted(ts)[len(ts) // 2], "ids": out,
                  "logits": logits}))
