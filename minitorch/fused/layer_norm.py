"""Layer normalisation over the last dim(s) as one Function, with the backward for input, weight and bias."""
import math

from .. import backend
from ..core import Function
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
    On the GPU (kernels below): three launches forward (mean, variance, normalise) and five backward (dw, db, the two
    row means, dx); xhat is recomputed inside each from x, mean and var, which are what is saved there.
    """
    needs_float = True

    def composed(self, x, weight, bias):  # what create_graph=True differentiates (docs/backprop.md)
        return composed.layer_norm(x, self.w_shape, weight, bias, self.eps)

    def forward(self, x, weight, bias, normalized_ndim, eps):
        xp = backend.xp_of(x)
        n = math.prod(x.shape[x.ndim - normalized_ndim:])
        self.x_shape, self.w_shape, self.eps = x.shape, x.shape[x.ndim - normalized_ndim:], eps
        x = x.reshape(-1, n)
        self.weight, self.fused = weight, backend.fused_path(x)
        if self.fused:
            return self.forward_fused(x, weight, bias).reshape(self.x_shape)
        centered = x - row_mean(x)[:, None]                                 # x - mean
        var = row_dot(centered, centered) / n                               # mean((x - mean)^2)
        rstd = 1.0 / xp.sqrt(var + eps)
        xhat = centered                                                     # scaled in place: the buffer now holds
        xhat *= rstd[:, None]                                               # xhat = (x - mean) * rstd
        self.xhat, self.rstd = xhat, rstd
        self.xhat_is_output = weight is None and bias is None  # then backward must not write into xhat
        if weight is None:
            y = xhat if bias is None else xhat + bias.reshape(n)  # never xhat += bias: xhat is saved for backward
        else:
            y = xhat * weight.reshape(n)
            if bias is not None:
                y += bias.reshape(n)
        return y.reshape(self.x_shape)

    def backward(self, g):
        if self.fused:
            return self.backward_fused(g)
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

    def forward_fused(self, x, weight, bias):
        one, n = x.dtype.type(1), x.shape[1]
        self.x, self.inv_n, self.eps = x, x.dtype.type(1.0 / n), x.dtype.type(self.eps)
        self.mean = _row_mean(x, self.inv_n)[:, None]
        self.var = _row_var(x, self.mean, self.inv_n)[:, None]
        w = one if weight is None else weight.reshape(n)
        b = 0 * one if bias is None else bias.reshape(n)
        return _normalize(x, self.mean, self.var, self.eps, w, b)

    def backward_fused(self, g):
        x, mean, var, eps, inv_n = self.x, self.mean, self.var, self.eps, self.inv_n
        need_x, need_w, need_b = self.needs_input_grad
        g = g.reshape(x.shape)
        dx = dw = db = None
        if need_w:
            dw = _weight_grad(g, x, mean, var, eps).reshape(self.w_shape)                    # sum(g * xhat)
        if need_b:
            db = g.sum(axis=0).reshape(self.w_shape)                                         # sum(g)
        if need_x:
            w = x.dtype.type(1) if self.weight is None else self.weight.reshape(x.shape[1])
            mean_gh = _row_mean_gh(g, w, inv_n)[:, None]                                     # mean(gh)
            mean_gh_xhat = _row_mean_gh_xhat(g, w, x, mean, var, eps, inv_n)[:, None]        # mean(gh * xhat)
            dx = _input_grad(g, w, x, mean, var, eps, mean_gh, mean_gh_xhat).reshape(self.x_shape)
        return dx, dw, db


# ----- the GPU kernels (backend.fuse): x (M, n) rows; mean, var (M, 1); w, b (n,) or scalars; one launch each -----
def _xhat(xp, x, mean, var, eps):
    """(x - mean) * rstd inside a kernel body, the same expression as the NumPy path's."""
    return (x - mean) * (1.0 / xp.sqrt(var + eps))


@backend.fuse
def _row_mean(xp, x, inv_n):
    """(M,) mean of each row."""
    return xp.sum(x * inv_n, axis=1)


@backend.fuse
def _row_var(xp, x, mean, inv_n):
    """(M,) mean((x - mean)^2) of each row."""
    centered = x - mean
    return xp.sum(centered * centered * inv_n, axis=1)


@backend.fuse
def _normalize(xp, x, mean, var, eps, w, b):
    """y = xhat * w + b."""
    return _xhat(xp, x, mean, var, eps) * w + b


@backend.fuse
def _weight_grad(xp, g, x, mean, var, eps):
    """dw = sum over rows of g * xhat."""
    return xp.sum(g * _xhat(xp, x, mean, var, eps), axis=0)


@backend.fuse
def _row_mean_gh(xp, g, w, inv_n):
    """(M,) mean(gh), gh = g * w."""
    return xp.sum(g * w * inv_n, axis=1)


@backend.fuse
def _row_mean_gh_xhat(xp, g, w, x, mean, var, eps, inv_n):
    """(M,) mean(gh * xhat)."""
    return xp.sum(g * w * _xhat(xp, x, mean, var, eps) * inv_n, axis=1)


@backend.fuse
def _input_grad(xp, g, w, x, mean, var, eps, mean_gh, mean_gh_xhat):
    """dx = (gh - mean(gh) - xhat * mean(gh * xhat)) * rstd."""
    return (g * w - mean_gh - _xhat(xp, x, mean, var, eps) * mean_gh_xhat) * (1.0 / xp.sqrt(var + eps))


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
