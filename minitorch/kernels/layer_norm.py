"""LayerNorm on the GPU, on x as (M, n) rows (the CPU runs the reference op, fused/layer_norm.py): two launches
forward (the row moments, normalise) and three backward (dw and db, the two row means, dx); xhat is recomputed inside
each from x and its row moments, which are what is saved there.

Two sums in one reduction: a fused kernel ends in at most one reduction, and on these sizes a launch costs about as
much as its work, so two sums over the same rows (or columns) are taken as one complex sum, sum(a + 1j b) = sum(a) +
1j sum(b): complex addition adds real and imaginary parts apart, so each part is the float sum it would be alone
(1j b is exact), and one reduction gives both.

float16 x (and w): read as float32 inside each kernel (in_body), the statistics and sums in float32, y and the
gradients rounded once to the inputs' dtypes (out_body), in the same launches."""

import numpy as np

from .. import backend
from ..core import fresh_gradients, kernel
from ..fused.layer_norm import LayerNorm
from ..fused.precision import in_body, out_body, scalar_type


@fresh_gradients   # dx, dw and db: each a kernel's own output (dw and db apart: _shaped)
@kernel(LayerNorm, "cuda")
class LayerNormCuda(LayerNorm):
    """Two kernels forward, four backward (two with need_x alone; dw and db are two sums of their own); saves x and
    w, as the reference, and keeps x's row moments (M, 1)."""

    def forward(self, x, weight, bias, normalized_ndim, eps):
        n = self.save_inputs(x, weight, normalized_ndim)
        x = x.reshape(-1, n)
        one, kind = x.dtype.type(1), scalar_type(x.dtype)
        self.inv_n, self.eps, self.j = kind(1.0 / n), kind(eps), _imaginary_unit(x.dtype)
        moments = _row_moments(x, x[:, :1], self.inv_n, self.j)[:, None]
        self.kept = (moments,)
        w = one if weight is None else weight.reshape(n)
        b = 0 * one if bias is None else bias.reshape(n)
        return _normalize(x, x[:, :1], moments, self.eps, w, b).reshape(self.x_shape)

    def backward(self, g):
        x, weight = self.saved_tensors
        (moments,), x = self.kept, x.reshape(-1, self.n)
        eps, inv_n, j, shift = self.eps, self.inv_n, self.j, x[:, :1]
        need_x, need_w, need_b = self.needs_input_grad
        g = g.reshape(x.shape)
        dx = dw = db = None
        # dw and db as two arrays of their own (not two views of one complex sum): the engine hands a parameter the
        # array its gradient arrives in without a copy only when nothing else shares it (core/backward.py)
        w_zero = (x if weight is None else weight).dtype.type(0)   # (a scalar of w's dtype: dw and db in it)
        if need_w:
            dw = _shaped(_weight_grad(g, x, shift, moments, eps, w_zero), self.w_shape)   # sum(g * xhat)
        if need_b:
            db = _shaped(g.sum(axis=0).astype(w_zero.dtype, copy=False), self.w_shape)   # sum(g) (CuPy's
            # sum of float16 adds in float32)
        if need_x:
            w = x.dtype.type(1) if weight is None else weight.reshape(x.shape[1])
            means = _row_means_gh(g, w, x, shift, moments, eps, inv_n, j)[:, None]          # mean(gh) + j mean(gh xhat)
            dx = _input_grad(g, w, x, shift, moments, eps, means).reshape(self.x_shape)
        return dx, dw, db


def _shaped(a, shape):
    """a in `shape`: itself when it has it already (a reshape would make a view, which the engine copies)."""
    return a if a.shape == shape else a.reshape(shape)


def _imaginary_unit(dtype):
    """1j as a complex scalar of x's precision (complex64 for float32): a kernel's scalar argument computes in its
    own type, so this keeps the complex sums at x's precision."""
    return np.result_type(dtype, np.complex64).type(1j)


# ----- the GPU kernels (backend.fuse): x (M, n) rows; shift = x[:, :1] and moments (M, 1); w, b (n,) or scalars -----
def _xhat(xp, x, shift, moments, eps):
    """(x - mean) * rstd inside a kernel body, from the row moments of x - shift (see _row_moments): mean = shift +
    mean(x - shift), var = mean((x - shift)^2) - mean(x - shift)^2 (at least 0)."""
    m1, m2 = xp.real(moments), xp.imag(moments)
    var = xp.maximum(m2 - m1 * m1, 0.0)
    return (in_body(xp, x) - (in_body(xp, shift) + m1)) * (1.0 / xp.sqrt(var + eps))


@backend.fuse
def _row_moments(xp, x, shift, inv_n, j):
    """(M,) complex: mean(x - shift) + j mean((x - shift)^2) of each row, in one pass. The shift, the row's first
    element, keeps the variance's difference of two means from cancelling (it is the shifted-data algorithm): the
    means are of the order of the spread of the row, not of its mean."""
    c = in_body(xp, x) - in_body(xp, shift)
    return xp.sum((c + j * (c * c)) * inv_n, axis=1)


@backend.fuse
def _normalize(xp, x, shift, moments, eps, w, b):
    """y = xhat * w + b."""
    return out_body(_xhat(xp, x, shift, moments, eps) * w + b, x)


@backend.fuse
def _weight_grad(xp, g, x, shift, moments, eps, w_zero):
    """dw = sum over rows of g * xhat, in the dtype of the scalar w_zero (w's)."""
    return out_body(xp.sum(in_body(xp, g) * _xhat(xp, x, shift, moments, eps), axis=0), w_zero)




@backend.fuse
def _row_means_gh(xp, g, w, x, shift, moments, eps, inv_n, j):
    """(M,) complex: mean(gh) + j mean(gh * xhat), gh = g * w."""
    gh = in_body(xp, g) * w * inv_n
    return xp.sum(gh + j * (gh * _xhat(xp, x, shift, moments, eps)), axis=1)


@backend.fuse
def _input_grad(xp, g, w, x, shift, moments, eps, means):
    """dx = (gh - mean(gh) - xhat * mean(gh * xhat)) * rstd."""
    m1, m2 = xp.real(moments), xp.imag(moments)
    rstd = 1.0 / xp.sqrt(xp.maximum(m2 - m1 * m1, 0.0) + eps)
    xhat = (in_body(xp, x) - (in_body(xp, shift) + m1)) * rstd
    return out_body((in_body(xp, g) * w - xp.real(means) - xhat * xp.imag(means)) * rstd, x)
