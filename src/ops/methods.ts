/**
 * Tensor methods (x.add(y), x.matmul(w), loss.backward()), attached here so the tensor layer does
 * not import the ops above it. Each is a one-line call to the function of the same name.
 */
import { backward } from '../autograd/engine.ts';
import { Tensor } from '../tensor/tensor.ts';
import * as F from './functional.ts';

declare module '../tensor/tensor.ts' {
  interface Tensor {
    /** `this + other`, broadcasting; other may be a number (torch.add). */
    add(other: Tensor | number): Tensor;
    /** `this − other`, broadcasting; other may be a number (torch.sub). */
    sub(other: Tensor | number): Tensor;
    /** `this · other` elementwise, broadcasting; other may be a number (torch.mul). */
    mul(other: Tensor | number): Tensor;
    /** `this / other` elementwise, broadcasting; other may be a number (torch.div). */
    div(other: Tensor | number): Tensor;
    /** `−this` elementwise. */
    neg(): Tensor;
    /** eˣ elementwise. */
    exp(): Tensor;
    /** Natural log elementwise (−Infinity at 0, NaN below). */
    log(): Tensor;
    /** √x elementwise. */
    sqrt(): Tensor;
    /** tanh elementwise. */
    tanh(): Tensor;
    /** σ(x) = 1 / (1 + e⁻ˣ) elementwise. */
    sigmoid(): Tensor;
    /** xᵖ elementwise, for a number p. */
    pow(p: number): Tensor;
    /** max(x, 0) elementwise. */
    relu(): Tensor;
    /**
     * GELU elementwise: `'none'` (default) the exact erf form, `'tanh'` GPT-2's approximation
     * (torch.nn.functional.gelu).
     */
    gelu(approximate?: 'none' | 'tanh'): Tensor;
    /**
     * Matrix product over the last two dims, broadcasting the batch dims, as torch.matmul: (..., n, k) · (...,
     * k, m) → (..., n, m).
     */
    matmul(other: Tensor): Tensor;
    /**
     * Sum over `dim` (one or several; all when omitted), keeping reduced dims as size 1 with `keepdim`
     * (torch.sum).
     */
    sum(dim?: number | number[], keepdim?: boolean): Tensor;
    /**
     * Mean over `dim` (one or several; all when omitted), keeping reduced dims as size 1 with `keepdim`
     * (torch.mean).
     */
    mean(dim?: number | number[], keepdim?: boolean): Tensor;
    /**
     * Index of the largest value along the last dim, as an int32 tensor with that dim removed (no gradient).
     */
    argmax(): Tensor;
    /** Softmax along `dim` (default −1, the last), max-subtracted for stability. */
    softmax(dim?: number): Tensor;
    /** log(softmax(x)) along `dim` (default −1), computed as x − logsumexp(x). */
    logSoftmax(dim?: number): Tensor;
    /** Dims reordered so that output dim i is input dim perm[i] (a contiguous copy), as torch.permute. */
    permute(...perm: number[]): Tensor;
    /** `dim0` and `dim1` swapped (a contiguous copy), as torch.transpose. */
    transpose(dim0: number, dim1: number): Tensor;
    /** Transpose of a 2-D tensor (torch's .T for matrices). */
    readonly T: Tensor;
    /** A view with a size-1 dim inserted at `dim` (negative counts from the end). */
    unsqueeze(dim: number): Tensor;
    /** A view without `dim` if its size is 1 (else the tensor itself), as torch.squeeze(x, dim). */
    squeeze(dim: number): Tensor;
    /** Elements [start, start + length) along `dim` (a copy), as torch.narrow. */
    narrow(dim: number, start: number, length: number): Tensor;
    /**
     * `chunks` equal pieces along `dim` (default 0); throws if the dim's size is not divisible by `chunks`.
     */
    chunk(chunks: number, dim?: number): Tensor[];
    /**
     * `value` where `mask` (broadcast to this shape) is nonzero, this tensor elsewhere; the gradient flows
     * only where the mask is 0 (torch.masked_fill).
     */
    maskedFill(mask: Tensor, value: number): Tensor;
    /** Broadcast to a larger `shape` (a copy, unlike torch's view; the gradient sums back). */
    expand(...shape: number[]): Tensor;
    /** Backpropagate from this tensor (a scalar, unless gradOutput is given). */
    backward(gradOutput?: Tensor): void;
  }
}

const P = Tensor.prototype;
P.add = function (o) {
  return F.add(this, o);
};
P.sub = function (o) {
  return F.sub(this, o);
};
P.mul = function (o) {
  return F.mul(this, o);
};
P.div = function (o) {
  return F.div(this, o);
};
P.neg = function () {
  return F.neg(this);
};
P.exp = function () {
  return F.exp(this);
};
P.log = function () {
  return F.log(this);
};
P.sqrt = function () {
  return F.sqrt(this);
};
P.tanh = function () {
  return F.tanh(this);
};
P.sigmoid = function () {
  return F.sigmoid(this);
};
P.pow = function (p) {
  return F.pow(this, p);
};
P.relu = function () {
  return F.relu(this);
};
P.gelu = function (approximate?: 'none' | 'tanh') {
  return F.gelu(this, approximate);
};
P.matmul = function (o) {
  return F.matmul(this, o);
};
P.sum = function (dim, keepdim) {
  return F.sum(this, dim, keepdim);
};
P.mean = function (dim, keepdim) {
  return F.mean(this, dim, keepdim);
};
P.argmax = function () {
  return F.argmax(this);
};
P.softmax = function (dim) {
  return F.softmax(this, dim);
};
P.logSoftmax = function (dim) {
  return F.logSoftmax(this, dim);
};
P.permute = function (...perm) {
  return F.permute(this, perm);
};
P.transpose = function (a, b) {
  return F.transpose(this, a, b);
};
Object.defineProperty(P, 'T', {
  get(this: Tensor) {
    if (this.ndim !== 2) throw new Error(`T: expected a 2-D tensor, got ${this.ndim}-D; use transpose(dim0, dim1)`);
    return F.transpose(this, 0, 1);
  },
});
P.unsqueeze = function (d) {
  return F.unsqueeze(this, d);
};
P.squeeze = function (d) {
  return F.squeeze(this, d);
};
P.narrow = function (d, s, l) {
  return F.narrow(this, d, s, l);
};
P.chunk = function (c, d) {
  return F.chunk(this, c, d);
};
P.maskedFill = function (m, v) {
  return F.maskedFill(this, m, v);
};
P.expand = function (...shape) {
  return F.expand(this, shape);
};
P.backward = function (g) {
  backward(this, g);
};
