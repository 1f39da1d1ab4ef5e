"""Softmax and LogSoftmax on the GPU: three kernels forward (max, sum of exponentials, output) and two backward (a row
reduction, the gradient). The CPU runs the reference ops (fused/softmax.py), which work in place. float16 rows are
read as float32 inside the kernels (in_body) and the outputs rounded once (out_body): float32 sums, no launch more."""
import math

from .. import backend
from ..core import kernel
from ..fused.precision import in_body, out_body
from ..fused.softmax import LogSoftmax, Softmax


# ----- the GPU kernels (backend.fuse): x, y, g (..., n) with the softmax's dim moved last; m, total (..., 1) -----
def safe_max(xp, m):
    """A row max of -inf (a row all -inf, or fully masked) as 0, so that the row's exponentials are exp(-inf) = 0,
    not nan (inside a kernel body; attention's masked softmax uses it too)."""
    return xp.where(m == -math.inf, 0.0, m)


@backend.fuse
def max_of_rows(xp, x):
    """(...,) max of each row."""
    return xp.max(x, axis=-1)


@backend.fuse
def exp_sum_of_rows(xp, x, m):
    """(...,) sum of exp(x - max) of each row."""
    return xp.sum(xp.exp(in_body(xp, x) - safe_max(xp, m)), axis=-1)


@backend.fuse
def _softmax_out(xp, x, m, total):
    """y = exp(x - max) / sum, dividing an all -inf row's zero sum by 1."""
    return out_body(xp.exp(in_body(xp, x) - safe_max(xp, m)) / xp.where(total == 0, 1.0, total), x)


@backend.fuse
def _log_softmax_out(xp, x, m, total):
    """y = x - max - log(sum) (an all -inf row: -inf)."""
    return out_body(in_body(xp, x) - safe_max(xp, m) - xp.log(xp.where(total == 0, 1.0, total)), x)


@backend.fuse
def _row_dot(xp, g, y):
    """(...,) <g, y> of each row."""
    return xp.sum(in_body(xp, g) * in_body(xp, y), axis=-1)


@backend.fuse
def _row_sum(xp, g, y):
    """(...,) sum(g) of each row (y is not read; the signature is _row_dot's)."""
    return xp.sum(in_body(xp, g), axis=-1)


@backend.fuse
def _softmax_grad(xp, g, y, g_dot_y):
    """dx = y * (g - <g, y>)."""
    return out_body(in_body(xp, y) * (in_body(xp, g) - g_dot_y), g)


@backend.fuse
def _log_softmax_grad(xp, g, y, g_sum):
    """dx = g - exp(y) * sum(g)."""
    return out_body(in_body(xp, g) - xp.exp(in_body(xp, y)) * g_sum, g)


def _fused_forward(x, dim, out_kernel):
    """out_kernel(x, max, sum) along dim, on x with dim moved last (a view), and the result moved back (a view)."""
    xp = backend.xp_of(x)
    x = xp.moveaxis(x, dim, -1)
    m = max_of_rows(x)[..., None]
    return xp.moveaxis(out_kernel(x, m, exp_sum_of_rows(x, m)[..., None]), -1, dim)


def _fused_backward(g, y, dim, reduce_kernel, grad_kernel):
    """grad_kernel(g, y, reduce_kernel(g, y)) with dim moved last, as _fused_forward."""
    xp = backend.xp_of(g)
    g, y = xp.moveaxis(g, dim, -1), xp.moveaxis(y, dim, -1)
    return xp.moveaxis(grad_kernel(g, y, reduce_kernel(g, y)[..., None]), -1, dim)


@kernel(Softmax, "cuda")
class SoftmaxCuda(Softmax):
    """Three kernels forward (max, sum of exponentials, y), two backward (<g, y>, dx)."""

    def forward(self, x, dim):
        self.dim = dim
        y = _fused_forward(x, dim, _softmax_out)
        self.save_for_backward(y)
        return y

    def backward(self, g):
        y, = self.saved_tensors
        return _fused_backward(g, y, self.dim, _row_dot, _softmax_grad)


@kernel(LogSoftmax, "cuda")
class LogSoftmaxCuda(LogSoftmax):
    """Three kernels forward (max, sum of exponentials, y), two backward (sum(g), dx)."""

    def forward(self, x, dim):
        self.dim = dim
        y = _fused_forward(x, dim, _log_softmax_out)
        self.save_for_backward(y)
        return y

    def backward(self, g):
        y, = self.saved_tensors
        return _fused_backward(g, y, self.dim, _row_sum, _log_softmax_grad)
