"""Softmax and log-softmax along one dim, each one Function whose backward needs only the saved output.

The CPU runs this code, whose forward works in place; the GPU's kernels (three forward, two backward) are in
minitorch/kernels/softmax.py.
"""
import math

from .. import backend
from ..core import Function
from ..ops import array_ops as A
from ..ops import normalize_dims
from .precision import HALF, narrow, wide


def safe_max(x, dim):
    """max(x) along dim (keepdim) of an array x: the shift of a softmax (attention's too), 0 for an all -inf (fully
    masked) row, whose -inf would give nan."""
    m = x.max(axis=dim, keepdims=True)
    backend.xp_of(m).copyto(m, 0, where=m == -math.inf)
    return m


def _row_sums(e, dim):
    """sum(e) along dim (keepdim), the zero sum of an all -inf row replaced by 1 (softmax 0, log-softmax -inf)."""
    total = e.sum(axis=dim, keepdims=True)
    backend.xp_of(e).copyto(total, 1, where=total == 0)
    return total


def _along(op, x, dim, name):
    """op (Softmax or LogSoftmax) of x along dim; a 0-d x is one row (gradient 0), an empty x an empty output."""
    n = max(x.ndim, 1)   # a 0-d x takes dim 0 or -1, as PyTorch's
    if not isinstance(dim, int) or not -n <= dim < n:
        _refuse_dim(dim, x.ndim, name)
    if x.ndim == 0:
        return op.apply(x.reshape(1), dim=0).reshape(())
    return x * 0.0 if x.data.size == 0 else op.apply(x, dim=dim % n)   # (a row's max needs an element)


def _refuse_dim(dim, ndim, name):
    if not isinstance(dim, int):
        raise TypeError(f"{name}: dim must be an int, got {dim!r}")
    normalize_dims(dim, ndim)   # raises its IndexError for a dim out of range


class Softmax(Function):
    """y = exp(x - max(x)) / sum(exp(x - max(x))) along dim; x any shape, y the same shape.

    Subtracting the row max changes nothing (softmax is shift-invariant) and keeps exp from overflowing. A row that
    is all -inf (fully masked) gives zeros, not nan.
    Backward (docs/backprop.md section 1), with <a, b> summed along dim:
        d y_i / d x_j = y_i ([i = j] - y_j)
        dx = y * (g - <g, y>)                            (dx_j = sum_i g_i d y_i / d x_j)
    The forward computes y in the one buffer of x - max; the backward makes two arrays, g * y and dx. float16 x:
    both compute in float32 (precision.py), y and dx are float16.
    """
    needs_float = True

    def forward(self, x, dim):
        self.dim, half = dim, x.dtype == HALF
        y = (wide(x) if half else x) - safe_max(x, dim)  # z = x - max, then exp(z), then / sum, all in place
        backend.xp_of(y).exp(y, out=y)
        y /= _row_sums(y, dim)
        y = narrow(y, HALF) if half else y
        self.save_for_backward(y)
        return y

    def backward(self, g):
        y, = self.saved_tensors
        g, y = (wide(g), wide(y)) if (half := g.dtype == HALF) else (g, y)
        dx = g - (g * y).sum(axis=self.dim, keepdims=True)   # g - <g, y>: a new array (or Tensor), scaled in place
        dx *= y
        return narrow(dx, HALF) if half else dx


class LogSoftmax(Function):
    """y = x - max(x) - log(sum(exp(x - max(x)))) along dim; x any shape, y the same shape.

    A row that is all -inf gives -inf (and a finite gradient), not nan.
    Backward (docs/backprop.md section 2), with p = softmax(x) = exp(y) and sums along dim:
        d y_i / d x_j = [i = j] - p_j
        dx = g - p * sum(g)
    The forward computes y in the buffer of x - max. float16 x: both compute in float32, y and dx are float16.
    """
    needs_float = True

    def forward(self, x, dim):
        xp = backend.xp_of(x)
        self.dim, dtype, x = dim, x.dtype, wide(x)
        y = x - safe_max(x, dim)                         # z = x - max, then z - log(sum(exp(z))) in place
        y -= xp.log(_row_sums(xp.exp(y), dim))
        y = narrow(y, dtype)
        self.save_for_backward(y)
        return y

    def backward(self, g):
        y, = self.saved_tensors
        dtype, g, y = g.dtype, wide(g), wide(y)
        p = A.exp(y)  # 0 on an all -inf row, whose gradient is then g
        return narrow(g - p * g.sum(axis=self.dim, keepdims=True), dtype)


def softmax(x, dim=-1):
    """Softmax of x (any shape) along dim; the same shape. Stable for large logits."""
    return _along(Softmax, x, dim, "softmax")


def log_softmax(x, dim=-1):
    """Log-softmax of x (any shape) along dim; the same shape. Stable for large logits."""
    return _along(LogSoftmax, x, dim, "log_softmax")
