/**
 * Tensor methods (x.add(y), x.matmul(w), loss.backward()), attached here so the tensor layer does
 * not import the ops above it. Each is a one-line call to the function of the same name.
 */
import { backward } from '../autograd/engine.ts';
import { Tensor } from '../tensor/tensor.ts';
// Straight from the op files, not through ./index.ts, which imports this module (no import circle).
import { add, sub, mul, div, neg, exp, log, sqrt, tanh, sigmoid, pow, relu, gelu, maskedFill, expand } from './elementwise.ts';
import { matmul } from './matmul.ts';
import { argmax, mean, sum } from './reduce.ts';
import { chunk, narrow, permute, squeeze, transpose, unsqueeze } from './shape.ts';
import { logSoftmax, softmax } from './softmax.ts';

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
P.add = function (o) { return add(this, o); };
P.sub = function (o) { return sub(this, o); };
P.mul = function (o) { return mul(this, o); };
P.div = function (o) { return div(this, o); };
P.neg = function () { return neg(this); };
P.exp = function () { return exp(this); };
P.log = function () { return log(this); };
P.sqrt = function () { return sqrt(this); };
P.tanh = function () { return tanh(this); };
P.sigmoid = function () { return sigmoid(this); };
P.pow = function (p) { return pow(this, p); };
P.relu = function () { return relu(this); };
P.gelu = function (approximate?: 'none' | 'tanh') { return gelu(this, approximate); };
P.matmul = function (o) { return matmul(this, o); };
P.sum = function (dim, keepdim) { return sum(this, dim, keepdim); };
P.mean = function (dim, keepdim) { return mean(this, dim, keepdim); };
P.argmax = function () { return argmax(this); };
P.softmax = function (dim) { return softmax(this, dim); };
P.logSoftmax = function (dim) { return logSoftmax(this, dim); };
P.permute = function (...perm) { return permute(this, perm); };
P.transpose = function (a, b) { return transpose(this, a, b); };
Object.defineProperty(P, 'T', {
  get(this: Tensor) {
    if (this.ndim !== 2) throw new Error(`T: expected a 2-D tensor, got ${this.ndim}-D; use transpose(dim0, dim1)`);
    return transpose(this, 0, 1);
  },
});
P.unsqueeze = function (d) { return unsqueeze(this, d); };
P.squeeze = function (d) { return squeeze(this, d); };
P.narrow = function (d, s, l) { return narrow(this, d, s, l); };
P.chunk = function (c, d) { return chunk(this, c, d); };
P.maskedFill = function (m, v) { return maskedFill(this, m, v); };
P.expand = function (...shape) { return expand(this, shape); };
P.backward = function (g) { backward(this, g); };
