"""Exercise 18 (conv2d): the backward of a 2-D convolution written as im2col and a matrix product.

forward(x, weight, bias, *, w): x (N, C, H, W), weight (O, C, kh, kw), bias (O,), float64; w is a Window with the
kernel size, strides, paddings and dilations (w.kh, w.kw, w.sh, w.sw, w.ph, w.pw, w.dh, w.dw). Copy the windows with
the given `im2col_array(x, w)` -> cols (N, C, kh, kw, Ho, Wo), where cols[n, c, i, j, y, z] is the zero-padded input
at row y*sh + i*dh and column z*sw + j*dw; then out = W2 @ cols2 + bias, with W2 = weight.reshape(O, C*kh*kw) and
cols2 = cols.reshape(N, C*kh*kw, Ho*Wo), reshaped to (N, O, Ho, Wo).
backward(g) -> (dx, dweight, dbias) for g = dL/d(out) of shape (N, O, Ho, Wo).

Derive from one element: out[n, o, p] = sum_k W2[o, k] cols2[n, k, p] + bias[o]. dW2 and dcols2 are matrix
products (sum dW2 over the batch); dbias sums g over every place it was added to. Then send dcols back to x: write
col2im yourself (do not import the engine's): the adjoint of im2col, which puts each entry of dcols back at the
input place it was copied from. Where windows overlap, one place of x was copied into several windows: what happens
to their gradients there? Drop the padding at the end.

Declare every array backward reads with self.save_for_backward(...) and read it back with self.saved_tensors (Python
values such as dims and flags stay plain attributes of self). The check runs your op as the engine runs it: in
backward, g and what you saved are read-only, and forward's inputs must not change (compute new arrays: g / b, not
g /= b); it also runs case 1 in float32, where the output and each gradient must be float32 too (new arrays in the
input's dtype: np.zeros(s, dtype=x.dtype)).

Check: python3 -m minitorch.tools.exercises check conv2d --dir THIS_FOLDER
Hint: python3 -m minitorch.tools.exercises hint conv2d
"""
from minitorch.autograd import Function
from minitorch.ops.windows import im2col_array  # noqa: F401 (the forward's window copy, given)


class Conv2d(Function):
    def forward(self, x, weight, bias, *, w):
        raise NotImplementedError

    def backward(self, g):
        raise NotImplementedError
