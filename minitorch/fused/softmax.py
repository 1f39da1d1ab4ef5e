"""Softmax and log-softmax along one dim, each one Function whose backward needs only the saved output.

The faster versions (in place on the CPU, three kernels forward and two backward on the GPU) are in
minitorch/kernels/softmax.py.
"""
from .. import backend
from ..core import Function
from ..ops import array_ops as A
from ..ops import normalize_dims


def _shift_and_sums(x, dim):
    """(z, total): z = x - max(x) along dim, total = sum(exp(z)) along dim (keepdim). A row that is all -inf is
    shifted by 0 (not by -inf, which gives nan) and its zero sum is replaced by 1 (softmax 0, log-softmax -inf)."""
    xp = backend.xp_of(x)
    m = x.max(axis=dim, keepdims=True)
    z = x - xp.where(xp.isneginf(m), 0, m)
    total = xp.exp(z).sum(axis=dim, keepdims=True)
    return z, xp.where(total == 0, 1, total)


def _one_dim(dim, ndim, op):
    if not isinstance(dim, int):
        raise TypeError(f"{op}: dim must be an int, got {dim!r}")
    return normalize_dims(dim, ndim)[0]


class Softmax(Function):
    """y = exp(x - max(x)) / sum(exp(x - max(x))) along dim; x any shape, y the same shape.

    Subtracting the row max changes nothing (softmax is shift-invariant) and keeps exp from overflowing. A row that
    is all -inf (fully masked) gives zeros, not nan.
    Backward (docs/backprop.md section 1), with <a, b> summed along dim:
        d y_i / d x_j = y_i ([i = j] - y_j)
        dx = y * (g - <g, y>)                            (dx_j = sum_i g_i d y_i / d x_j)
    """
    needs_float = True

    def forward(self, x, dim):
        self.dim = dim
        z, total = _shift_and_sums(x, dim)
        y = backend.xp_of(x).exp(z) / total
        self.save_for_backward(y)
        return y

    def backward(self, g):
        y, = self.saved_tensors
        dx = y * (g - A.sum(g * y, self.dim, keepdim=True))
        return dx


class LogSoftmax(Function):
    """y = x - max(x) - log(sum(exp(x - max(x)))) along dim; x any shape, y the same shape.

    A row that is all -inf gives -inf (and a finite gradient), not nan.
    Backward (docs/backprop.md section 2), with p = softmax(x) = exp(y) and sums along dim:
        d y_i / d x_j = [i = j] - p_j
        dx = g - p * sum(g)
    """
    needs_float = True

    def forward(self, x, dim):
        self.dim = dim
        z, total = _shift_and_sums(x, dim)
        y = z - backend.xp_of(x).log(total)
        self.save_for_backward(y)
        return y

    def backward(self, g):
        y, = self.saved_tensors
        p = A.exp(y)  # 0 on an all -inf row, whose gradient is then g
        dx = g - p * A.sum(g, self.dim, keepdim=True)
        return dx


def softmax(x, dim=-1):
    """Softmax of x (any shape) along dim; the same shape. Stable for large logits."""
    return Softmax.apply(x, dim=_one_dim(dim, x.ndim, "softmax"))


def log_softmax(x, dim=-1):
    """Log-softmax of x (any shape) along dim; the same shape. Stable for large logits."""
    return LogSoftmax.apply(x, dim=_one_dim(dim, x.ndim, "log_softmax"))
