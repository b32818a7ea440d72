// The seeds' first worked example, then a PyTorch-compatible attention layer with gradients.
// Run: npm run example
import { F, nn, tensor, randn, manualSeed } from 'qkv';

// Seed 003: Q = K = I₂, V = [[2, 3], [4, 5]].
const I = tensor([
  [1, 0],
  [0, 1],
]);
const V = tensor([
  [2, 3],
  [4, 5],
]);
const { output, weights } = F.attention(I, I, V, { needWeights: true });
console.log('weights', weights!.tolist()); // ≈ [[0.67, 0.33], [0.33, 0.67]]
console.log('output ', output.tolist()); // ≈ [[2.66, 3.66], [3.34, 4.34]]

// torch.nn.MultiheadAttention, same names, same masks (TRUE = blocked), same state-dict keys.
manualSeed(0);
const mha = new nn.MultiheadAttention(32, 4, { kdim: 24, vdim: 40, batchFirst: true });
const q = randn([2, 5, 32]).requiresGrad_();
const k = randn([2, 7, 24]);
const v = randn([2, 7, 40]);
const keyPaddingMask = tensor([
  [false, false, false, false, false, true, true],
  [false, false, false, false, false, false, false],
]);
const res = mha.forward(q, k, v, { keyPaddingMask, averageAttnWeights: false });
console.log('output', res.output.shape, 'per-head weights', res.weights!.shape); // [2, 5, 32] [2, 4, 5, 7]
res.output.mul(res.output).sum().backward();
console.log(
  'grad of q_proj_weight',
  mha.qProjWeight!.grad!.shape,
  'state dict',
  Object.keys(mha.stateDict()).join(', '),
);
