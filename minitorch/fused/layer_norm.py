"""Layer normalisation over the last dim(s) as one Function, with the backward for input, weight and bias."""
import math

from .. import backend
from ..autograd import Function
from ..tensor import Tensor
from . import composed
from .rows import grad_buffer, row_dot, row_mean


class LayerNorm(Function):
    """y = xhat * w + b, xhat = (x - mean(x)) * rstd, rstd = 1 / sqrt(var(x) + eps), over the last k dims.

    x (..., *S) with S the normalised shape (k dims, n elements); w, b (S) or None; var is biased (divides by n).
    Computed on x as (M, n) rows. Backward (docs/backprop.md section 4), with gh = g * w, means over each row, sums
    over rows for w and b:
        dw = sum(g * xhat),   db = sum(g)
        dx = (gh - mean(gh) - xhat * mean(gh * xhat)) * rstd    (d xhat / d x removes the mean and the xhat direction)
    Saves xhat (M, n) in x's dtype, rstd (M,) and a reference to w. The backward scales xhat in place for its last
    term when no second backward follows and xhat is not the output (rows.grad_buffer).
    """
    needs_float = True

    def composed(self, x, weight, bias):  # what create_graph=True differentiates (docs/backprop.md)
        return composed.layer_norm(x, self.w_shape, weight, bias, self.eps)

    def forward(self, x, weight, bias, normalized_ndim, eps):
        xp = backend.xp_of(x)
        n = math.prod(x.shape[x.ndim - normalized_ndim:])
        self.x_shape, self.w_shape, self.eps = x.shape, x.shape[x.ndim - normalized_ndim:], eps
        x = x.reshape(-1, n)
        centered = x - row_mean(x)[:, None]                                 # x - mean
        var = row_dot(centered, centered) / n                               # mean((x - mean)^2)
        rstd = 1.0 / xp.sqrt(var + eps)
        xhat = centered                                                     # scaled in place: the buffer now holds
        xhat *= rstd[:, None]                                               # xhat = (x - mean) * rstd
        self.xhat, self.rstd, self.weight = xhat, rstd, weight
        self.xhat_is_output = weight is None and bias is None  # then backward must not write into xhat
        if weight is None:
            y = xhat if bias is None else xhat + bias.reshape(n)  # never xhat += bias: xhat is saved for backward
        else:
            y = xhat * weight.reshape(n)
            if bias is not None:
                y += bias.reshape(n)
        return y.reshape(self.x_shape)

    def backward(self, g):
        xp = backend.xp_of(g)
        xhat, rstd = self.xhat, self.rstd
        need_x, need_w, need_b = self.needs_input_grad
        n = xhat.shape[1]
        g = g.reshape(-1, n)
        dx = dw = db = None
        if need_w:
            dw = xp.einsum("ij,ij->j", g, xhat).reshape(self.w_shape)          # sum(g * xhat)
        if need_b:
            db = g.sum(axis=0).reshape(self.w_shape)                           # sum(g)
        if need_x:
            gh = g if self.weight is None else g * self.weight.reshape(n)       # gh
            mean_gh_xhat = row_dot(gh, xhat) / n                               # mean(gh * xhat)
            mean_gh = row_mean(gh)[:, None]                                    # mean(gh)
            dx = gh - mean_gh if gh is g else xp.subtract(gh, mean_gh, out=gh)  # g is the caller's: never written
            buffer = None if self.xhat_is_output else grad_buffer(self, xhat)
            xhat_term = xp.multiply(xhat, mean_gh_xhat[:, None], out=buffer)
            dx -= xhat_term                                                     # - xhat * mean(gh * xhat)
            dx *= rstd[:, None]                                                 # * rstd
            dx = dx.reshape(self.x_shape)
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
