"""PyTorch + PEFT peer of bench/finetune.ts: LoRA steps on transformers' LlamaForCausalLM, on a folder bench/finetune.ts
wrote (config.json and model.safetensors holding the same seeded weights as qkv's rows, under Hugging Face's names).

  python llama_peft.py FOLDER IDS_JSON STEPS THREADS RECOMPUTE R ALPHA TARGETS_JSON LR
      float32; get_peft_model(LoraConfig(r, lora_alpha, target_modules, lora_dropout 0)); with RECOMPUTE 1,
      gradient_checkpointing_enable(use_reentrant False) first (transformers' activation recomputation per layer).
      Each step: logits of the ids' first SEQ, cross-entropy against their last SEQ (the same loss as qkv's),
      backward, clip_grad_norm_(1.0), torch.optim.AdamW(lr, no weight decay). One untimed step, then STEPS timed.
      Prints JSON {torch, transformers, peft, attn, ms, peak_mib, loss0}: the median step, VmHWM less VmRSS before
      the model is loaded, the first step's loss.
"""
import json
import re
import sys
import time

import peft
import torch
import transformers
from peft import LoraConfig, get_peft_model
from transformers import LlamaForCausalLM

folder, ids_json, steps, threads, recompute, r, alpha, targets, lr = sys.argv[1:10]
steps, threads, r, alpha, lr = int(steps), int(threads), int(r), float(alpha), float(lr)
torch.set_num_threads(threads)
ids = torch.tensor(json.loads(ids_json))
x, y = ids[:, :-1], ids[:, 1:]


def status(key):
    with open("/proc/self/status") as f:
        return int(re.search(key + r":\s+(\d+)", f.read()).group(1)) / 1024


base = status("VmRSS")
model = LlamaForCausalLM.from_pretrained(folder, dtype=torch.float32)
if recompute == "1":
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
config = LoraConfig(r=r, lora_alpha=alpha, lora_dropout=0.0, target_modules=json.loads(targets), task_type="CAUSAL_LM")
model = get_peft_model(model, config)
model.train()
trainable = [p for p in model.parameters() if p.requires_grad]
opt = torch.optim.AdamW(trainable, lr=lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)
times, losses = [], []
for i in range(steps + 1):
    t = time.perf_counter()
    opt.zero_grad(set_to_none=False)
    logits = model(input_ids=x).logits
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
    loss.backward()
    torch.nn.utils.clip_grad_norm_(trainable, 1.0)
    opt.step()
    losses.append(loss.item())
    if i > 0:
        times.append((time.perf_counter() - t) * 1000)
print(json.dumps({"torch": torch.__version__, "transformers": transformers.__version__, "peft": peft.__version__,
                  "attn": model.config._attn_implementation, "ms": sorted(times)[len(times) // 2],
                  "peak_mib": status("VmHWM") - base, "loss0": losses[0]}))
