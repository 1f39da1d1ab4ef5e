"""Scaled dot-product attention (Vaswani et al. 2017, eq. 1) as one Function, dropout on the weights included."""
import math

import numpy as np

from .. import backend
from ..core import Function
from ..kernels.dropout import dropout_kernel, scale_by_mask
from ..ops.dropout import keep_mask, keep_threshold, random_words
from ..tensor import Tensor
from . import composed
from .softmax import safe_max


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
    Packed inputs: q may be qkv (3, ..., T, d) with k and v None (self_attention), or k may be kv (2, ..., Tk, d) with
    v None (cross_attention); the products of the backward then write the parts' gradients into one gradient array,
    where each part would get a zero-padded gradient of the packed shape for the engine to add up (a memset, a copy
    and an add a part on a GPU).
    On the GPU the softmax with its scale and mask is three kernels (row max, sum of exponentials, weights written over
    s) and the backward's two (<dw, w>, then ds with the scale folded in); dropout adds one after its random draw.
    There it saves C-contiguous copies (q, k, v^T, and w^T beside w) that its matmuls read without copying them.
    """
    needs_float = True

    def composed(self, q, k, v, mask):  # what create_graph=True differentiates (docs/backprop.md)
        q, k, v = _unpacked(q, k, v)
        return composed.scaled_dot_product_attention(q, k, v, mask, self.dropout_p, keep=self.keep)

    def forward(self, q, k, v, mask, dropout_p):
        xp = backend.xp_of(q)
        self.fused = backend.fused_path(q)
        # which input holds each of q, k, v's gradients: (input, part) for a packed one, (input, None) otherwise
        self.parts = ((0, 0), (0, 1), (0, 2)) if k is None else ((0, None), (1, 0), (1, 1)) if v is None else \
            ((0, None), (1, None), (2, None))
        self.shapes = [a.shape for a in (q, k, v) if a is not None]
        q, k, v = _unpacked(q, k, v)
        self.scale = 1.0 / math.sqrt(q.shape[-1])
        if self.fused:
            return self.forward_fused(*_contiguous_parts(xp, q, k, v), mask, dropout_p)
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
            self.keep = keep_mask(random_words(w.shape, backend.device_of(w)), dropout_p)
            self.dropout_scale = 1.0 / (1.0 - dropout_p)
            a = w * self.keep
            a *= self.dropout_scale
        return a @ v

    def backward(self, g):
        xp = backend.xp_of(g)
        # a packed input's gradient is one array whose parts the products write (product)
        packed = {i for i, part in self.parts if part is not None and self.needs_input_grad[i]}
        self.grads = [xp.empty(shape, g.dtype) if n in packed else None for n, shape in enumerate(self.shapes)]
        dq, dk, dv, _ = self.backward_fused(g) if self.fused else self.backward_arrays(g)
        grads = [grad if grad is not None else d for grad, d in zip(self.grads, (dq, dk, dv))]
        return tuple(grads + [None] * (4 - len(grads)))

    def backward_arrays(self, g):
        xp = backend.xp_of(g)
        q, k, v, w = self.q, self.k, self.v, self.w
        need_q, need_k, need_v = self.needs_qkv_grad()
        a = w
        if self.keep is not None:  # rebuilt from w and the bool mask rather than saved: 1 byte an element, not 4-8
            a = w * self.keep
            a *= self.dropout_scale
        dv = self.product(_swap(a), g, 2) if need_v else None
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
        dq = self.product(ds, k, 0) if need_q else None
        dk = self.product(_swap(ds), q, 1) if need_k else None
        if dq is not None:
            dq *= self.scale
        if dk is not None:
            dk *= self.scale
        return dq, dk, dv, None

    def forward_fused(self, q, k, v, k_t, v_t, mask, dropout_p):
        """CuPy copies each batched matmul operand that is not C-contiguous, transposes included: so q, k, v, k^T, v^T
        come C-contiguous from one kernel (_contiguous_parts), and the softmax writes w^T beside w for the backward."""
        scale = q.dtype.type(self.scale)
        mask = True if mask is None else mask                                # where(True, ...) keeps every score
        s = q @ k_t
        row_max = _masked_row_max(s, mask, scale)[..., None]
        total = _masked_exp_sum(s, mask, scale, row_max)[..., None]
        self.w_t = _transposed_buffer(s)
        _masked_softmax(s, mask, scale, row_max, total, _swap(self.w_t))     # written over s (returning it would
        w = s                                                                # make CuPy copy it): w = softmax(s)
        self.q, self.k, self.v_t, self.w = q, k, v_t, w
        self.keep, self.dropout_p, self.dropout_scale = None, dropout_p, q.dtype.type(1)
        a = w
        if dropout_p > 0.0:  # the words keep_mask compares, so a fixed seed gives the NumPy path's mask
            device = backend.device_of(w)
            self.dropout_scale = q.dtype.type(1.0 / (1.0 - dropout_p))
            a, self.keep = dropout_kernel(w, random_words(w.shape, device), keep_threshold(dropout_p, backend.xp_of(w)),
                                          self.dropout_scale)
        return a @ v

    def backward_fused(self, g):
        g = backend.xp_of(g).ascontiguousarray(g)                            # one copy for its two products
        q, k, w = self.q, self.k, self.w
        need_q, need_k, need_v = self.needs_qkv_grad()
        keep = True if self.keep is None else self.keep
        a_t = self.w_t if self.keep is None else scale_by_mask(self.w_t, _swap(self.keep), self.dropout_scale)
        dv = self.product(a_t, g, 2) if need_v else None                     # dv = a^T g
        if not (need_q or need_k):
            return None, None, dv, None
        da = g @ self.v_t                                                    # da = g v^T
        dw_dot_w = _dropped_dot(da, keep, self.dropout_scale, w)[..., None]  # <dw, w>
        ds_t = _transposed_buffer(da)
        _softmax_grad(da, keep, self.dropout_scale, w, dw_dot_w, q.dtype.type(self.scale), _swap(ds_t))
        ds = da                                                              # written over da, and ds^T beside it
        dq = self.product(ds, k, 0) if need_q else None                      # ds carries the 1 / sqrt(d)
        dk = self.product(ds_t, q, 1) if need_k else None
        return dq, dk, dv, None

    def needs_qkv_grad(self):
        return tuple(self.needs_input_grad[i] for i, _ in self.parts)

    def product(self, a, b, which):
        """a @ b, the gradient of q, k or v (which 0, 1, 2): written into its part of a packed input's gradient."""
        i, part = self.parts[which]
        return backend.xp_of(a).matmul(a, b, out=None if part is None else self.grads[i][part])


def _unpacked(q, k, v):
    """(q, k, v) from qkv (3, ...) with k and v None, or from q and kv (2, ...) with v None."""
    if k is None:
        return q[0], q[1], q[2]
    return (q, k[0], k[1]) if v is None else (q, k, v)


def _transposed_buffer(a):
    """An empty C-contiguous array shaped like a with its last two axes swapped: a kernel writes a^T into its
    swapped view, which a matmul then reads without a copy."""
    return backend.xp_of(a).empty(a.shape[:-2] + (a.shape[-1], a.shape[-2]), a.dtype)


def _contiguous_parts(xp, q, k, v):
    """q, k, v, k^T and v^T, C-contiguous, copied from q, k, v (views of a projection) by one kernel when q, k, v have
    one shape (self-attention) or k and v do (with q's own copy), else by a copy each."""
    k_t, v_t = _transposed_buffer(k), _transposed_buffer(v)
    if q.shape == k.shape == v.shape:
        out = xp.empty((3,) + q.shape, q.dtype)
        _copy_parts(q, k, v, out[0], out[1], out[2], _swap(k_t), _swap(v_t))
        return out[0], out[1], out[2], k_t, v_t
    if k.shape == v.shape:
        out = xp.empty((2,) + k.shape, k.dtype)
        _copy_keys_values(k, v, out[0], out[1], _swap(k_t), _swap(v_t))
        return xp.ascontiguousarray(q), out[0], out[1], k_t, v_t
    k_t[...], v_t[...] = _swap(k), _swap(v)
    return xp.ascontiguousarray(q), xp.ascontiguousarray(k), xp.ascontiguousarray(v), k_t, v_t


# ----- the GPU kernels (backend.fuse): s, w, da (..., Tq, Tk); mask True or bool broadcastable to them -----
@backend.fuse
def _copy_parts(xp, q, k, v, q_out, k_out, v_out, k_t_out, v_t_out):
    """q, k, v copied into the outputs, and k, v into k^T's and v^T's swapped views, in one kernel."""
    q_out[...] = q
    _copy_keys_values.body(xp, k, v, k_out, v_out, k_t_out, v_t_out)


@backend.fuse
def _copy_keys_values(xp, k, v, k_out, v_out, k_t_out, v_t_out):
    """k, v copied into the outputs, and into k^T's and v^T's swapped views, in one kernel."""
    k_out[...] = k
    v_out[...] = v
    k_t_out[...] = k
    v_t_out[...] = v

def _masked_exp(xp, s, mask, scale, row_max):
    """exp(s * scale - max), 0 where masked (exp(-inf): a masked score above the row's max cannot overflow)."""
    return xp.exp(xp.where(mask, s * scale - safe_max(xp, row_max), -math.inf))


@backend.fuse
def _masked_row_max(xp, s, mask, scale):
    """(..., Tq) max of the scaled scores that may be attended to (-inf for none)."""
    return xp.max(xp.where(mask, s * scale, -math.inf), axis=-1)


@backend.fuse
def _masked_exp_sum(xp, s, mask, scale, row_max):
    """(..., Tq) sum of exp(s * scale - max) over the keys that may be attended to."""
    return xp.sum(_masked_exp(xp, s, mask, scale, row_max), axis=-1)


@backend.fuse
def _masked_softmax(xp, s, mask, scale, row_max, total, w_t):
    """w = softmax(s * scale) with 0 where masked, written into s and into w^T's swapped view (a fully masked row:
    sum 0, divided by 1)."""
    w = _masked_exp(xp, s, mask, scale, row_max) / xp.where(total == 0, 1.0, total)
    w_t[...] = w
    s[...] = w


@backend.fuse
def _dropped_dot(xp, da, keep, dropout_scale, w):
    """(..., Tq) <dw, w> with dw = da * m / (1 - p)."""
    return xp.sum(da * keep * dropout_scale * w, axis=-1)


@backend.fuse
def _softmax_grad(xp, da, keep, dropout_scale, w, dw_dot_w, scale, ds_t):
    """ds = w * (dw - <dw, w>) / sqrt(d), written into da and into ds^T's swapped view."""
    ds = w * (da * keep * dropout_scale - dw_dot_w) * scale
    ds_t[...] = ds
    da[...] = ds


def scaled_dot_product_attention(q, k, v, mask=None, dropout_p=0.0, training=True):
    """q (..., Tq, d), k (..., Tk, d), v (..., Tk, dv), mask bool broadcastable to (..., Tq, Tk) (True = may attend)
    -> (..., Tq, dv). Dropout with probability dropout_p on the attention weights while training."""
    if q.ndim < 2 or k.ndim < 2 or v.ndim < 2 or q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise ValueError(f"scaled_dot_product_attention: expected q (..., Tq, d), k (..., Tk, d), v (..., Tk, dv); "
                         f"got q {q.shape}, k {k.shape}, v {v.shape}")
    try:
        scores_shape = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2]) + (q.shape[-2], k.shape[-2])
    except ValueError:
        raise ValueError(f"scaled_dot_product_attention: the batch dims of q {q.shape}, k {k.shape} and v {v.shape} "
                         f"do not broadcast together") from None
    mask = _checked(mask, dropout_p, scores_shape, q.device, "scaled_dot_product_attention")
    if k.shape[-2] == 0:  # no keys at all (e.g. an empty source): like a fully masked row, the output is zeros
        return (q @ k.transpose(-2, -1)) @ v
    return ScaledDotProductAttention.apply(q, k, v, mask, dropout_p=dropout_p if training else 0.0)


def self_attention(qkv, mask=None, dropout_p=0.0, training=True):
    """qkv (3, ..., T, d): q, k, v stacked, as one projection makes them -> (..., T, d): the same as
    scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], mask, dropout_p, training), with one gradient array for qkv."""
    if not isinstance(qkv, Tensor) or qkv.ndim < 3 or qkv.shape[0] != 3:
        raise ValueError(f"self_attention: expected qkv (3, ..., T, d), got {getattr(qkv, 'shape', type(qkv))}")
    scores_shape = qkv.shape[1:-1] + qkv.shape[-2:-1]
    mask = _checked(mask, dropout_p, scores_shape, qkv.device, "self_attention")
    if qkv.shape[-2] == 0:
        return scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], mask, dropout_p, training)
    return ScaledDotProductAttention.apply(qkv, None, None, mask, dropout_p=dropout_p if training else 0.0)


def cross_attention(q, kv, mask=None, dropout_p=0.0, training=True):
    """q (..., Tq, d), kv (2, ..., Tk, d): keys and values stacked, as one projection of the memory makes them ->
    (..., Tq, d): scaled_dot_product_attention(q, kv[0], kv[1], mask, dropout_p, training), with one gradient array
    for kv."""
    if not isinstance(kv, Tensor) or kv.ndim < 3 or kv.shape[0] != 2 or q.ndim < 2 or q.shape[-1] != kv.shape[-1] \
            or q.shape[:-2] != kv.shape[1:-2]:
        raise ValueError(f"cross_attention: expected q (..., Tq, d) and kv (2, ..., Tk, d) with the same batch dims; "
                         f"got q {getattr(q, 'shape', type(q))}, kv {getattr(kv, 'shape', type(kv))}")
    scores_shape = q.shape[:-1] + kv.shape[-2:-1]
    mask = _checked(mask, dropout_p, scores_shape, q.device, "cross_attention")
    if kv.shape[-2] == 0:
        return scaled_dot_product_attention(q, kv[0], kv[1], mask, dropout_p, training)
    return ScaledDotProductAttention.apply(q, kv, None, mask, dropout_p=dropout_p if training else 0.0)


def _checked(mask, dropout_p, scores_shape, device, who):
    """The mask as a bool array on device (None stays None), after checking it and dropout_p."""
    if not 0.0 <= dropout_p < 1.0:
        raise ValueError(f"{who}: dropout_p must be in [0, 1), got {dropout_p}")
    if mask is not None:
        mask = mask.data if isinstance(mask, Tensor) else mask
        if not backend.is_array(mask):
            mask = np.asarray(mask)
        if mask.dtype != np.bool_:
            raise TypeError(f"{who}: mask must be bool (True = may attend), got dtype {mask.dtype}")
        try:
            fits = np.broadcast_shapes(mask.shape, scores_shape) == scores_shape
        except ValueError:
            fits = False
        if not fits:
            raise ValueError(f"{who}: mask of shape {tuple(mask.shape)} does not broadcast to the scores' shape "
                             f"{scores_shape} (..., Tq, Tk)")
        mask = backend.to_device(mask, device)
    return mask
