/**
 * Tensor methods (x.add(y), x.matmul(w), loss.backward()), attached here so the tensor layer does
 * not import the ops above it. Each is a one-line call to the function of the same name.
 */
import { backward } from '../autograd/engine.ts';
import { Tensor } from '../tensor/tensor.ts';
import * as F from './index.ts';

declare module '../tensor/tensor.ts' {
  interface Tensor {
    add(other: Tensor | number): Tensor;
    sub(other: Tensor | number): Tensor;
    mul(other: Tensor | number): Tensor;
    div(other: Tensor | number): Tensor;
    neg(): Tensor;
    exp(): Tensor;
    log(): Tensor;
    sqrt(): Tensor;
    tanh(): Tensor;
    sigmoid(): Tensor;
    pow(p: number): Tensor;
    relu(): Tensor;
    gelu(approximate?: 'none' | 'tanh'): Tensor;
    matmul(other: Tensor): Tensor;
    sum(dim?: number | number[], keepdim?: boolean): Tensor;
    mean(dim?: number | number[], keepdim?: boolean): Tensor;
    argmax(): Tensor;
    softmax(dim?: number): Tensor;
    logSoftmax(dim?: number): Tensor;
    permute(...perm: number[]): Tensor;
    transpose(dim0: number, dim1: number): Tensor;
    /** Transpose of a 2-D tensor (torch's .T for matrices). */
    readonly T: Tensor;
    unsqueeze(dim: number): Tensor;
    squeeze(dim: number): Tensor;
    narrow(dim: number, start: number, length: number): Tensor;
    chunk(chunks: number, dim?: number): Tensor[];
    maskedFill(mask: Tensor, value: number): Tensor;
    expand(...shape: number[]): Tensor;
    /** Backpropagate from this tensor (a scalar, unless gradOutput is given). */
    backward(gradOutput?: Tensor): void;
  }
}

const P = Tensor.prototype;
P.add = function (o) { return F.add(this, o); };
P.sub = function (o) { return F.sub(this, o); };
P.mul = function (o) { return F.mul(this, o); };
P.div = function (o) { return F.div(this, o); };
P.neg = function () { return F.neg(this); };
P.exp = function () { return F.exp(this); };
P.log = function () { return F.log(this); };
P.sqrt = function () { return F.sqrt(this); };
P.tanh = function () { return F.tanh(this); };
P.sigmoid = function () { return F.sigmoid(this); };
P.pow = function (p) { return F.pow(this, p); };
P.relu = function () { return F.relu(this); };
P.gelu = function (approximate?: 'none' | 'tanh') { return F.gelu(this, approximate); };
P.matmul = function (o) { return F.matmul(this, o); };
P.sum = function (dim, keepdim) { return F.sum(this, dim, keepdim); };
P.mean = function (dim, keepdim) { return F.mean(this, dim, keepdim); };
P.argmax = function () { return F.argmax(this); };
P.softmax = function (dim) { return F.softmax(this, dim); };
P.logSoftmax = function (dim) { return F.logSoftmax(this, dim); };
P.permute = function (...perm) { return F.permute(this, perm); };
P.transpose = function (a, b) { return F.transpose(this, a, b); };
Object.defineProperty(P, 'T', {
  get(this: Tensor) {
    if (this.ndim !== 2) throw new Error(`T: expected a 2-D tensor, got ${this.ndim}-D; use transpose(dim0, dim1)`);
    return F.transpose(this, 0, 1);
  },
});
P.unsqueeze = function (d) { return F.unsqueeze(this, d); };
P.squeeze = function (d) { return F.squeeze(this, d); };
P.narrow = function (d, s, l) { return F.narrow(this, d, s, l); };
P.chunk = function (c, d) { return F.chunk(this, c, d); };
P.maskedFill = function (m, v) { return F.maskedFill(this, m, v); };
P.expand = function (...shape) { return F.expand(this, shape); };
P.backward = function (g) { backward(this, g); };
