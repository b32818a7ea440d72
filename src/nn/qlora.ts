/**
 * QLoRA's base (Dettmers et al. 2023, "QLoRA: Efficient Finetuning of Quantized LLMs"): the pretrained weights
 * frozen in 8 or 4 bits, float LoRA pairs trained on top, the gradient reaching every pair through the quantized
 * layers above it. In qkv the base is `module.quantize`'s int8 (a float32 scale per row) or q4 (Q4_0: a float16
 * scale per block of 32), where QLoRA's reference (bitsandbytes) has NF4 with double quantization and LLM.int8().
 *
 * A quantized layer prepared here computes x·dequant(W)ᵀ in float32 (F.linearDequantized), as bitsandbytes'
 * 4-bit layer dequantizes to its compute dtype: so a step over the quantized base is the float step over the
 * dequantized weights (what test/train/qlora-exact.test.ts holds against PEFT), dX = dY·dequant(W) carries the
 * gradient down, and the quantized values take none. The embedding tables stay float32, as bitsandbytes leaves
 * embeddings and the output head (a tied head is the table): the head's gradient is the first any adapter needs.
 */
import type { QuantDType } from '../ops/matmul.ts';
import { MultiheadAttention } from './attention.ts';
import { Linear } from './layers.ts';
import { freeze } from './lora.ts';
import type { Module } from './module.ts';

/**
 * Quantize `model`'s linear layers (nn.Linear, attention's packed q/k/v) to `dtype`, keep its tables float32,
 * make the quantized layers pass the gradient to their input, and freeze every parameter (attach the LoRA
 * pairs afterwards: peft.ts attachLora, or `addLora`). PEFT's prepare_model_for_kbit_training, with the
 * quantizing that transformers' BitsAndBytesConfig does at load. Returns the model.
 */
export function quantizeForLora<M extends Module>(model: M, dtype: QuantDType): M {
  if (dtype !== 'int8' && dtype !== 'q4')
    throw new Error(`quantizeForLora: dtype must be 'int8' or 'q4', got ${String(dtype)}`);
  model.quantize({ dtype, tables: 'float32' });
  for (const [, m] of model.namedModules())
    if (m instanceof Linear || m instanceof MultiheadAttention) m.computeDequantized = true;
  return freeze(model);
}
