"""Layer normalisation over the last dim(s) as one Function, with the backward for input, weight and bias."""
from ..core import Function
from ..ops import array_ops as A
from ..tensor import Tensor


class LayerNorm(Function):
    """y = xhat * w + b, xhat = (x - mean(x)) * rstd, rstd = 1 / sqrt(var(x) + eps), over the last k dims.

    x (..., *S) with S the normalised shape (k dims, n elements); w, b (S) or None; var is biased (divides by n).
    Backward (docs/backprop.md section 4), with gh = g * w, means over the normalised dims, sums over the others:
        dw = sum(g * xhat),   db = sum(g)
        dx = (gh - mean(gh) - xhat * mean(gh * xhat)) * rstd    (d xhat / d x removes the mean and the xhat direction)
    Saves x and w; backward computes xhat and rstd again from x. (minitorch/kernels/layer_norm.py: a CPU kernel that
    saves them instead, and the GPU's fused kernels.)
    """
    needs_float = True

    def normalize(self, x):
        """(xhat, rstd) of x, rstd keeping its normalised dims as size 1: for the forward and again for backward."""
        dims = tuple(range(x.ndim - self.k, x.ndim))
        centered = x - A.mean(x, dims, True)
        rstd = 1.0 / A.sqrt(A.mean(centered * centered, dims, True) + self.eps)
        return centered * rstd, rstd

    def forward(self, x, weight, bias, normalized_ndim, eps):
        self.k, self.eps = normalized_ndim, eps
        self.save_for_backward(x, weight)
        xhat, _ = self.normalize(x)
        y = xhat if weight is None else xhat * weight
        return y if bias is None else y + bias

    def backward(self, g):
        x, weight = self.saved_tensors
        need_x, need_w, need_b = self.needs_input_grad
        xhat, rstd = self.normalize(x)
        dims, rows = tuple(range(x.ndim - self.k, x.ndim)), tuple(range(x.ndim - self.k))
        dw = A.sum(g * xhat, rows) if need_w else None
        db = A.sum(g, rows) if need_b else None
        dx = None
        if need_x:
            gh = g if weight is None else g * weight
            dx = (gh - A.mean(gh, dims, True) - xhat * A.mean(gh * xhat, dims, True)) * rstd
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
