/**
 * The elements of a tensor (HF name) whose gradient is zero in exact arithmetic: the key projection's bias adds
 * q·b_k to every score of a query, which softmax cancels. PyTorch and qkv compute it as rounding noise (~1e-9),
 * which differs with the summation order (qkv against PyTorch, and PyTorch on one CPU against another), and Adam
 * divides it by its own root mean square, so the update is ±lr in the direction of the noise: those elements can
 * only be compared within Adam's step, the rest at float32 tolerances. `E` is the model's width (GPT-2's c_attn
 * bias is [q | k | v], 3E long); null where no element of `name` is noise.
 */
export function noiseOnly(name: string, E: number): ((i: number) => boolean) | null {
  if (/attn\.c_attn\.bias$/.test(name)) return (i) => i >= E && i < 2 * E;
  if (/\.k_proj\.bias$/.test(name)) return () => true;
  return null;
}
