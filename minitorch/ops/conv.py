"""2-D convolution and pooling as im2col (windows.py) and one matrix product or reduction; each backward sends its
window gradient back through col2im, which sums the gradients of overlapping windows."""
from .. import backend
from ..core import Function
from . import array_ops as A
from .windows import col2im, im2col, im2col_array


def refuse_groups(name, groups):
    """F.conv2d's and nn.Conv2d's one refusal of grouped convolutions (this op has no groups)."""
    if groups != 1:
        raise NotImplementedError(f"{name}: groups={groups}; minitorch's convolution has groups=1 only")


class Conv2d(Function):
    """out = W2 @ cols + b: x (N, C, H, W), weight (n_out, C, kh, kw) as W2 (n_out, K), cols = im2col(x) (N, K, L),
    K = C kh kw, L = Ho Wo, bias (n_out,) or None.
    dW2 = sum_n g[n] cols[n]^T;  db = g summed over n and the L places;
    dcols = W2^T g, and dx = col2im(dcols): a place of x read by several windows gets the sum of their gradients."""
    needs_float = True
    autocast_to = "half"

    def forward(self, x, weight, bias, *, w):
        self.save_for_backward(x if self.needs_input_grad[1] else None, weight if self.needs_input_grad[0] else None)
        self.w, self.x_shape, self.w_shape = w, x.shape, weight.shape
        cols = im2col_array(x, w)
        (N, n_out), (Ho, Wo) = (x.shape[0], weight.shape[0]), cols.shape[-2:]
        out = (weight.reshape(n_out, -1) @ cols.reshape(N, -1, Ho * Wo)).reshape(N, n_out, Ho, Wo)
        if bias is not None:
            out += bias.reshape(n_out, 1, 1)   # in place: out is this op's own new array
        return out

    def backward(self, g):
        x, weight = self.saved_tensors
        need_x, need_w, need_b = self.needs_input_grad
        N, n_out, Ho, Wo = g.shape
        g2 = g.reshape(N, n_out, Ho * Wo)
        dx = dw = db = None
        if need_x:
            dcols = (weight.reshape(n_out, -1).T @ g2).reshape((N, self.x_shape[1], self.w.kh, self.w.kw, Ho, Wo))
            dx = col2im(dcols, self.w, self.x_shape)
        if need_w:
            cols = im2col(x, self.w).reshape(N, -1, Ho * Wo)
            dw = A.sum(g2 @ A.swap_last(cols), 0).reshape(self.w_shape)
        if need_b:
            db = A.sum(g, (0, 2, 3))
        return dx, dw, db


class MaxPool2d(Function):
    """out = the largest entry of each window (the padding is -inf, never chosen).
    d out = d x at the window's first maximum: dcols = onehot(argmax) g, and dx = col2im(dcols), where windows that
    overlap and share a maximum both send it their gradient."""
    needs_float = True   # the padding is -inf, which no integer holds

    def forward(self, x, *, w):
        xp = backend.xp_of(x)
        cols = im2col_array(x, w, pad_value=-xp.inf)
        N, C, kh, kw, Ho, Wo = cols.shape
        flat = cols.reshape(N, C, kh * kw, Ho, Wo)
        first = flat.argmax(axis=2)[:, :, None]   # PyTorch's choice among ties too
        onehot = xp.arange(kh * kw).reshape(1, 1, -1, 1, 1) == first
        self.save_for_backward(onehot)   # a bool mask: a constant for the gradient's gradient
        self.w, self.x_shape = w, x.shape
        return flat.max(axis=2)

    def backward(self, g):
        onehot, = self.saved_tensors
        N, C, Ho, Wo = g.shape
        dcols = (onehot * g[:, :, None]).reshape(N, C, self.w.kh, self.w.kw, Ho, Wo)
        return col2im(dcols, self.w, self.x_shape)


class AvgPool2d(Function):
    """out = the mean of each window, the padding counted as zeros (PyTorch's count_include_pad=True).
    d out / d cols = 1 / (kh kw) at each place of the window: dcols = g / (kh kw) spread over it, dx = col2im(dcols)."""
    needs_float = True

    def forward(self, x, *, w):
        self.w, self.x_shape = w, x.shape
        return im2col_array(x, w).mean(axis=(2, 3))

    def backward(self, g):
        N, C, Ho, Wo = g.shape
        share = (g / (self.w.kh * self.w.kw)).reshape(N, C, 1, 1, Ho, Wo)
        return col2im(A.broadcast_to(share, (N, C, self.w.kh, self.w.kw, Ho, Wo)), self.w, self.x_shape)
