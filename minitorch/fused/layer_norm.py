"""Layer normalisation over the last dim(s) as one Function, with the backward for input, weight and bias."""
from .. import backend
from ..autograd import Function
from ..tensor import Tensor


class LayerNorm(Function):
    """y = xhat * w + b, xhat = (x - mean(x)) * rstd, rstd = 1 / sqrt(var(x) + eps), over the last k dims.

    x (..., *S) with S the normalised shape (k dims, n elements); w, b (S) or None; var is biased (divides by n).
    Backward, with gh = g * w and means over the k normalised dims (sums over the leading dims for w and b):
        dx = rstd * (gh - mean(gh) - xhat * mean(gh * xhat))    (d xhat / dx removes the mean and the xhat direction)
        dw = sum(g * xhat),   db = sum(g)
    Saves xhat (x's shape and dtype), rstd (one number per normalised row) and a reference to w.
    """
    needs_float = True

    def forward(self, x, weight, bias, normalized_ndim, eps):
        xp = backend.xp_of(x)
        dims = tuple(range(x.ndim - normalized_ndim, x.ndim))
        xhat = x - x.mean(axis=dims, keepdims=True)
        var = (xhat * xhat).mean(axis=dims, keepdims=True)
        rstd = 1.0 / xp.sqrt(var + eps)
        xhat *= rstd
        self.xhat, self.rstd, self.weight, self.dims = xhat, rstd, weight, dims
        if weight is None:
            return xhat if bias is None else xhat + bias  # never xhat += bias: xhat is saved for the backward
        y = xhat * weight
        if bias is not None:
            y += bias
        return y

    def backward(self, g):
        xhat, rstd, dims = self.xhat, self.rstd, self.dims
        need_x, need_w, need_b = self.needs_input_grad
        batch_dims = tuple(range(g.ndim - len(dims)))
        dx = dw = db = None
        if need_x:
            gh = g if self.weight is None else g * self.weight
            dx = gh - gh.mean(axis=dims, keepdims=True)
            dx -= xhat * (gh * xhat).mean(axis=dims, keepdims=True)
            dx *= rstd
        if need_w:
            dw = (g * xhat).sum(axis=batch_dims)
        if need_b:
            db = g.sum(axis=batch_dims)
        return dx, dw, db


def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    """x (..., *normalized_shape) -> the same shape, normalised over the last len(normalized_shape) dims."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if not shape or x.shape[x.ndim - len(shape):] != shape or x.ndim < len(shape):
        raise ValueError(f"layer_norm: normalized_shape {shape} must match the last dims of the input, whose shape "
                         f"is {x.shape}")
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None and (not isinstance(p, Tensor) or p.shape != shape):
            raise ValueError(f"layer_norm: {name} must be a Tensor of shape {shape}, got "
                             f"{getattr(p, 'shape', type(p).__name__)}")
    return LayerNorm.apply(x, weight, bias, normalized_ndim=len(shape), eps=float(eps))  # a float: no float64 upcast
