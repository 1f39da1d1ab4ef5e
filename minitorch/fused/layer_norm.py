"""Layer normalisation over the last dim(s) as one Function, with the backward for input, weight and bias."""
import math

from ..core import Function, fresh_gradients
from ..tensor import Tensor
from .precision import HALF, narrow, wide
from .rows import filled, into, row_dots


@fresh_gradients   # dx in the buffer of gh or a difference, dw and db sums: arrays it makes
class LayerNorm(Function):
    """y = xhat * w + b, xhat = (x - mean(x)) * rstd, rstd = 1 / sqrt(var(x) + eps), over the last k dims.

    x (..., *S) with S the normalised shape (k dims, n elements); w, b (S) or None; var is biased (divides by n).
    Backward (docs/backprop.md section 4), with gh = g * w, means over the normalised dims, sums over the others:
        dw = sum(g * xhat),   db = sum(g)
        dx = (gh - mean(gh) - xhat * mean(gh * xhat)) * rstd    (d xhat / d x removes the mean and the xhat direction)
    Saves x and w, and keeps each row's mean and rstd (two numbers a row), from which backward makes xhat again in one
    pass (under create_graph it computes them again from x).
    Both work on x as (M, n) rows. A row's mean is a matrix-vector product with a vector of 1/n (one BLAS call,
    faster than NumPy's mean); dx is made in the buffers of gh and xhat (on Tensors, under create_graph=True, those are
    recorded in-place ops on Tensors no other op saved).
    float16 x or w: the statistics and gradients are computed in float32 (precision.py); y and dx come back in x's
    dtype, dw and db in w's.
    """
    needs_float = True

    def normalized(self, x, over_n, moments=None):
        """(xhat, mean, rstd) of x (M, n): xhat a new array, mean and rstd (M, 1), computed, or taken from moments
        (mean, rstd) when forward kept them; for the forward and again for backward (arrays or Tensors)."""
        mean, rstd = moments or ((x @ over_n).reshape(-1, 1), None)
        centered = x - mean
        if rstd is None:
            rstd = (row_dots(centered, centered) * (1.0 / self.n) + self.eps) ** -0.5
        return into("multiply", centered, rstd), mean, rstd                 # xhat, in the buffer of x - mean

    def over_n(self, x):
        """(n,) 1 / n, an array of x's dtype on x's device (x an array or a Tensor): a row @ over_n is its mean."""
        return filled(self.n, 1.0 / self.n, x)

    def forward(self, x, weight, bias, normalized_ndim, eps):
        n, self.eps = self.save_inputs(x, weight, normalized_ndim), eps
        dtype, x = x.dtype, wide(x)
        y, mean, rstd = self.normalized(x.reshape(-1, n), self.over_n(x))   # y: xhat, then in place
        self.kept = mean, rstd                                              # for backward
        if weight is not None:   # (in place: a float16 w or b is widened as it is read)
            y *= weight.reshape(n)
        if bias is not None:
            y += bias.reshape(n)
        return narrow(y, dtype).reshape(self.x_shape)

    def save_inputs(self, x, weight, normalized_ndim):
        """Save x and w, and note the shapes backward reads (the GPU kernel does the same, so that the reference's
        backward can run on its node under create_graph) -> n, the size of a normalised row."""
        self.n = math.prod(x.shape[x.ndim - normalized_ndim:])
        self.x_shape, self.w_shape = x.shape, x.shape[x.ndim - normalized_ndim:]
        self.save_for_backward(x, weight)
        return self.n

    def backward(self, g):
        x, weight = self.saved_tensors
        need_x, need_w, need_b = self.needs_input_grad
        x_dtype, w_dtype = x.dtype, (x.dtype if weight is None else weight.dtype)
        x, g, weight = wide(x, g, weight)
        n, over_n = self.n, self.over_n(x)
        x, g = x.reshape(-1, n), g.reshape(-1, n)
        xhat, _, rstd = self.normalized(x, over_n, self.kept)              # (kept () under create_graph)
        rows = (-1, *self.w_shape)   # (summed over rows, in w's shape: arrays of their own, which a leaf keeps)
        dw = (g * xhat).reshape(rows).sum(axis=0) if need_w else None         # sum(g * xhat)
        db = g.reshape(rows).sum(axis=0) if need_b else None                 # sum(g)
        dx = None
        if need_x:
            gh = g if weight is None else g * weight.reshape(n)
            mean_gh = (gh @ over_n).reshape(-1, 1)
            dx = gh - mean_gh if weight is None else into("subtract", gh, mean_gh)   # gh - mean(gh), a new array
            mean_gh_xhat = ((gh * xhat) @ over_n).reshape(-1, 1)
            dx -= into("multiply", xhat, mean_gh_xhat)                      # - xhat * mean(gh * xhat)
            dx *= rstd
            dx = dx.reshape(self.x_shape)
        if HALF in (x_dtype, w_dtype):   # each gradient in its input's dtype
            dx, dw, db = narrow(dx, x_dtype), narrow(dw, w_dtype), narrow(db, w_dtype)
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
