"""LayerNorm on each device, on x as (M, n) rows. The CPU kernel saves xhat and rstd (the reference computes them
again) and writes its last gradient term into xhat when no second backward follows. On the GPU: three launches
forward (mean, variance, normalise) and five backward (dw, db, the two row means, dx); xhat is recomputed inside each
from x, mean and var, which are what is saved there."""
import math

from .. import backend
from ..core import kernel
from ..fused.layer_norm import LayerNorm
from .rows import grad_buffer, row_dot, row_mean


@kernel(LayerNorm, "cpu")
class LayerNormCpu(LayerNorm):
    """In place on one (M, n) buffer; saves xhat (M, n) in x's dtype, rstd (M,) and w."""

    def forward(self, x, weight, bias, normalized_ndim, eps):
        xp = backend.xp_of(x)
        n = math.prod(x.shape[x.ndim - normalized_ndim:])
        self.x_shape, self.w_shape = x.shape, x.shape[x.ndim - normalized_ndim:]
        x = x.reshape(-1, n)
        centered = x - row_mean(x)[:, None]                                 # x - mean
        var = row_dot(centered, centered) / n                               # mean((x - mean)^2)
        rstd = 1.0 / xp.sqrt(var + eps)
        xhat = centered                                                     # scaled in place: the buffer now holds
        xhat *= rstd[:, None]                                               # xhat = (x - mean) * rstd
        self.save_for_backward(xhat, rstd, weight)
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
        xhat, rstd, weight = self.saved_tensors
        need_x, need_w, need_b = self.needs_input_grad
        n = xhat.shape[1]
        g = g.reshape(-1, n)
        dx = dw = db = None
        if need_w:
            dw = xp.einsum("ij,ij->j", g, xhat).reshape(self.w_shape)          # sum(g * xhat)
        if need_b:
            db = g.sum(axis=0).reshape(self.w_shape)                           # sum(g)
        if need_x:
            gh = g if weight is None else g * weight.reshape(n)                # gh
            mean_gh_xhat = row_dot(gh, xhat) / n                               # mean(gh * xhat)
            mean_gh = row_mean(gh)[:, None]                                    # mean(gh)
            dx = gh - mean_gh if gh is g else xp.subtract(gh, mean_gh, out=gh)  # g is the caller's: never written
            buffer = None if self.xhat_is_output else grad_buffer(self, xhat)
            xhat_term = xp.multiply(xhat, mean_gh_xhat[:, None], out=buffer)
            dx -= xhat_term                                                     # - xhat * mean(gh * xhat)
            dx *= rstd[:, None]                                                 # * rstd
            dx = dx.reshape(self.x_shape)
        return dx, dw, db


@kernel(LayerNorm, "cuda")
class LayerNormCuda(LayerNorm):
    """Three kernels forward, five backward; saves x (M, n), mean and var (M, 1) and w."""

    def forward(self, x, weight, bias, normalized_ndim, eps):
        n = math.prod(x.shape[x.ndim - normalized_ndim:])
        self.x_shape, self.w_shape = x.shape, x.shape[x.ndim - normalized_ndim:]
        x = x.reshape(-1, n)
        one = x.dtype.type(1)
        self.inv_n, self.eps = x.dtype.type(1.0 / n), x.dtype.type(eps)
        mean = _row_mean(x, self.inv_n)[:, None]
        var = _row_var(x, mean, self.inv_n)[:, None]
        self.save_for_backward(x, mean, var, weight)
        w = one if weight is None else weight.reshape(n)
        b = 0 * one if bias is None else bias.reshape(n)
        return _normalize(x, mean, var, self.eps, w, b).reshape(self.x_shape)

    def backward(self, g):
        x, mean, var, weight = self.saved_tensors
        eps, inv_n = self.eps, self.inv_n
        need_x, need_w, need_b = self.needs_input_grad
        g = g.reshape(x.shape)
        dx = dw = db = None
        if need_w:
            dw = _weight_grad(g, x, mean, var, eps).reshape(self.w_shape)                    # sum(g * xhat)
        if need_b:
            db = g.sum(axis=0).reshape(self.w_shape)                                         # sum(g)
        if need_x:
            w = x.dtype.type(1) if weight is None else weight.reshape(x.shape[1])
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
