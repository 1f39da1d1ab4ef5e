"""Softmax and log-softmax along one dim, each one Function whose backward needs only the saved output."""
from .. import backend
from ..autograd import Function
from ..ops import normalize_dims
from . import composed


def _shift_by_max(x, dim):
    """x - max(x) along dim; a row that is all -inf is shifted by 0 instead, so it never becomes nan."""
    xp = backend.xp_of(x)
    m = x.max(axis=dim, keepdims=True)
    xp.copyto(m, 0, where=xp.isneginf(m))
    return x - m


def _row_sums(e, dim):
    """sum(e) along dim, with the zero sum of an all -inf row replaced by 1 (softmax 0, log-softmax -inf)."""
    total = e.sum(axis=dim, keepdims=True)
    backend.xp_of(e).copyto(total, 1, where=total == 0)
    return total


def _one_dim(dim, ndim, op):
    if not isinstance(dim, int):
        raise TypeError(f"{op}: dim must be an int, got {dim!r}")
    return normalize_dims(dim, ndim)[0]


class Softmax(Function):
    """y = exp(x - max(x)) / sum(exp(x - max(x))) along dim; x any shape, y the same shape.

    Subtracting the row max changes nothing (softmax is shift-invariant) and keeps exp from overflowing. A row that
    is all -inf (fully masked) gives zeros, not nan.
    Backward, with <a, b> summed along dim:
        dy_i = y_i dx_i - y_i sum_j y_j dx_j            (d y_i / d x_j = y_i ([i = j] - y_j))
        dx   = y * (g - <g, y>)                          (vector-Jacobian product with the incoming g)
    """
    needs_float = True

    def composed(self, x):  # what create_graph=True differentiates (docs/backprop.md)
        return composed.softmax(x, self.dim)

    def forward(self, x, dim):
        y = _shift_by_max(x, dim)
        backend.xp_of(x).exp(y, out=y)
        y /= _row_sums(y, dim)
        self.y, self.dim = y, dim
        return y

    def backward(self, g):
        y = self.y
        dx = g * y
        gy = dx.sum(axis=self.dim, keepdims=True)   # <g, y>
        backend.xp_of(g).subtract(g, gy, out=dx)    # g - <g, y>, reusing the buffer of g * y
        dx *= y
        return dx


class LogSoftmax(Function):
    """y = x - max(x) - log(sum(exp(x - max(x)))) along dim; x any shape, y the same shape.

    A row that is all -inf gives -inf (and a finite gradient), not nan.
    Backward, with p = softmax(x) = exp(y) and sums along dim:
        dy_i = dx_i - sum_j p_j dx_j                    (d y_i / d x_j = [i = j] - p_j)
        dx   = g - exp(y) * sum(g)
    """
    needs_float = True

    def composed(self, x):  # what create_graph=True differentiates (docs/backprop.md)
        return composed.log_softmax(x, self.dim)

    def forward(self, x, dim):
        xp = backend.xp_of(x)
        y = _shift_by_max(x, dim)
        y -= xp.log(_row_sums(xp.exp(y), dim))
        self.y, self.dim = y, dim
        return y

    def backward(self, g):
        xp = backend.xp_of(g)
        dx = xp.exp(self.y)                              # p
        dx *= g.sum(axis=self.dim, keepdims=True)
        xp.subtract(g, dx, out=dx)
        return dx


def softmax(x, dim=-1):
    """Softmax of x (any shape) along dim; the same shape. Stable for large logits."""
    return Softmax.apply(x, dim=_one_dim(dim, x.ndim, "softmax"))


def log_softmax(x, dim=-1):
    """Log-softmax of x (any shape) along dim; the same shape. Stable for large logits."""
    return LogSoftmax.apply(x, dim=_one_dim(dim, x.ndim, "log_softmax"))
