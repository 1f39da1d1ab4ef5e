"""Scaled dot-product attention (Vaswani et al. 2017, eq. 1) as one Function, dropout on the weights included."""
import math

import numpy as np

from .. import backend
from ..autograd import Function
from ..ops.elementwise import keep_mask
from ..tensor import Tensor
from . import composed


def _swap(a):
    return a.swapaxes(-1, -2)


class ScaledDotProductAttention(Function):
    """out = dropout(softmax(q k^T / sqrt(d) masked)) v.

    q (..., Tq, d), k (..., Tk, d), v (..., Tk, dv) -> out (..., Tq, dv); batch dims broadcast as in matmul.
    mask bool, broadcastable to (..., Tq, Tk), True = may attend; a row with no True gets weights 0 (out 0).
    Forward names: s = q k^T / sqrt(d), w = softmax(s) (0 where masked), a = w * m / (1 - p) with m the kept mask.
    Backward (docs/backprop.md section 5; the dropout mask m is the forward's, saved as bool):
        dv = a^T g,       da = g v^T,       dw = da * m / (1 - p)
        ds = w * (dw - sum(dw * w, -1))                       (the softmax backward; 0 where w is 0)
        dq = ds k / sqrt(d),   dk = ds^T q / sqrt(d)
    Saves q, k, v (the inputs, no copies), w and the bool mask m.
    """
    needs_float = True

    def composed(self, q, k, v, mask):  # what create_graph=True differentiates (docs/backprop.md)
        return composed.scaled_dot_product_attention(q, k, v, mask, self.dropout_p, keep=self.keep)

    def forward(self, q, k, v, mask, dropout_p):
        xp = backend.xp_of(q)
        self.scale = 1.0 / math.sqrt(q.shape[-1])
        s = q @ _swap(k)
        s *= self.scale                                      # s = q k^T / sqrt(d)
        if mask is not None:
            xp.copyto(s, -math.inf, where=~mask)
        row_max = s.max(axis=-1, keepdims=True)
        if mask is not None:  # a fully masked row has max -inf; shifting by 0 instead keeps exp(-inf) = 0, no nan
            xp.copyto(row_max, 0, where=xp.isneginf(row_max))
        w = s                                                # the softmax works in place: the buffer of s becomes w
        w -= row_max
        xp.exp(w, out=w)
        total = w.sum(axis=-1, keepdims=True)
        if mask is not None:  # and its sum is 0: divide by 1 to leave the row at 0
            xp.copyto(total, 1, where=total == 0)
        w /= total                                           # w = softmax(s)
        self.q, self.k, self.v, self.w = q, k, v, w
        self.keep, self.dropout_p = None, dropout_p
        a = w
        if dropout_p > 0.0:
            # the same draw as ops.Dropout, so a fixed seed gives the same mask as the composed version
            self.keep = keep_mask(w.shape, dropout_p, backend.device_of(w))
            self.dropout_scale = 1.0 / (1.0 - dropout_p)
            a = w * self.keep
            a *= self.dropout_scale
        return a @ v

    def backward(self, g):
        xp = backend.xp_of(g)
        q, k, v, w = self.q, self.k, self.v, self.w
        need_q, need_k, need_v, _ = self.needs_input_grad
        a = w
        if self.keep is not None:  # rebuilt from w and the bool mask rather than saved: 1 byte an element, not 4-8
            a = w * self.keep
            a *= self.dropout_scale
        dv = _swap(a) @ g if need_v else None
        if not (need_q or need_k):
            return None, None, dv, None
        da = g @ _swap(v)                                    # da = g v^T
        dw = da                                              # scaled in place: the buffer of da becomes dw
        if self.keep is not None:
            dw *= self.keep
            dw *= self.dropout_scale                         # dw = da * m / (1 - p)
        dw_w = dw * w
        dw_dot_w = dw_w.sum(axis=-1, keepdims=True)          # <dw, w>
        ds = xp.subtract(dw, dw_dot_w, out=dw_w)             # in the buffer of dw * w
        ds *= w                                              # ds = w * (dw - <dw, w>)
        dq = ds @ k if need_q else None
        dk = _swap(ds) @ q if need_k else None
        if dq is not None:
            dq *= self.scale
        if dk is not None:
            dk *= self.scale
        return dq, dk, dv, None


def scaled_dot_product_attention(q, k, v, mask=None, dropout_p=0.0, training=True):
    """q (..., Tq, d), k (..., Tk, d), v (..., Tk, dv), mask bool broadcastable to (..., Tq, Tk) (True = may attend)
    -> (..., Tq, dv). Dropout with probability dropout_p on the attention weights while training."""
    if q.ndim < 2 or k.ndim < 2 or v.ndim < 2 or q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise ValueError(f"scaled_dot_product_attention: expected q (..., Tq, d), k (..., Tk, d), v (..., Tk, dv); "
                         f"got q {q.shape}, k {k.shape}, v {v.shape}")
    if not 0.0 <= dropout_p < 1.0:
        raise ValueError(f"scaled_dot_product_attention: dropout_p must be in [0, 1), got {dropout_p}")
    try:
        scores_shape = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2]) + (q.shape[-2], k.shape[-2])
    except ValueError:
        raise ValueError(f"scaled_dot_product_attention: the batch dims of q {q.shape}, k {k.shape} and v {v.shape} "
                         f"do not broadcast together") from None
    if mask is not None:
        mask = mask.data if isinstance(mask, Tensor) else mask
        if not backend.is_array(mask):
            mask = np.asarray(mask)
        if mask.dtype != np.bool_:
            raise TypeError(f"scaled_dot_product_attention: mask must be bool (True = may attend), got dtype "
                            f"{mask.dtype}")
        try:
            fits = np.broadcast_shapes(mask.shape, scores_shape) == scores_shape
        except ValueError:
            fits = False
        if not fits:
            raise ValueError(f"scaled_dot_product_attention: mask of shape {tuple(mask.shape)} does not broadcast to "
                             f"the scores' shape {scores_shape} (..., Tq, Tk)")
        mask = backend.to_device(mask, q.device)
    if k.shape[-2] == 0:  # no keys at all (e.g. an empty source): like a fully masked row, the output is zeros
        return (q @ k.transpose(-2, -1)) @ v
    return ScaledDotProductAttention.apply(q, k, v, mask, dropout_p=dropout_p if training else 0.0)
