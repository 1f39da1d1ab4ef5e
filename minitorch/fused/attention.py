"""Scaled dot-product attention (Vaswani et al. 2017, eq. 1) as one Function, dropout on the weights included.

The reference op below is the derivation, written once for arrays and Tensors, in place where an array is fresh (the
CPU runs it); the GPU's fuse kernels are in minitorch/kernels/attention.py."""
import math

import numpy as np

from .. import backend
from ..core import Function
from ..ops import array_ops as A
from ..ops.dropout import dropped_out, keep_mask, random_words
from ..functions import stack
from ..tensor import Tensor
from .precision import HALF, narrow, wide
from .rows import into, row_sums
from .softmax import safe_max


class ScaledDotProductAttention(Function):
    """out = dropout(softmax(q k^T / sqrt(d) masked)) v.

    q (..., Tq, d), k (..., Tk, d), v (..., Tk, dv) -> out (..., Tq, dv); batch dims broadcast as in matmul.
    mask bool, broadcastable to (..., Tq, Tk), True = may attend; a row with no True gets weights 0 (out 0).
    words: None, or the random uint16 words of dropout (the weights' shape), drawn by the entry functions below.
    Forward names: s = q k^T / sqrt(d), w = softmax(s) (0 where masked), a = w * m / (1 - p) with m the kept mask.
    Backward (docs/backprop.md section 5; the dropout mask m is the forward's, keep_mask(words, p), saved as bool):
        dv = a^T g,       da = g v^T,       dw = da * m / (1 - p)
        ds = w * (dw - sum(dw * w, -1))                       (the softmax backward; 0 where w is 0)
        dq = ds k / sqrt(d),   dk = ds^T q / sqrt(d)
    Saves its inputs q, k, v, the bool mask and m, and keeps w (computed again from q and k under create_graph).
    Packed inputs: q may be qkv (3, ..., T, d) with k and v None (self_attention), or k may be kv (2, ..., Tk, d) with
    v None (cross_attention); the packed input's gradient is then its parts' gradients stacked.
    Arrays made here are worked on in place (the softmax in the buffer of its shifted scores, ds in the buffer of
    dw - <dw, w>, the 1 / sqrt(d) of dq and dk taken once on ds): on Tensors, under create_graph=True, those are
    recorded in-place ops on Tensors that no op saved, or new Tensors (rows.into).
    float16 inputs: both compute in float32 here (precision.py; the GPU kernels multiply in float16, with float32
    sums), and the output and gradients are float16.
    """
    needs_float = True
    autocast_to = "half"

    def forward(self, q, k, v, mask, words, *, dropout_p):
        self.dropout_p = dropout_p
        keep = None if words is None else keep_mask(words, dropout_p)
        self.save_for_backward(q, k, v, mask, keep)
        dtype = q.dtype
        q, k, v = _unpacked(*wide(q, k, v))
        w = self.weights(q, k, mask)
        self.kept = (w,)                                     # kept: backward need not compute it again
        return narrow(self.dropped(w, keep) @ v, dtype)

    def backward(self, g):
        q_in, k_in, v_in, mask, keep = self.saved_tensors
        grads = self.wide_gradients(wide(g), q_in, k_in, v_in, mask, keep)
        if q_in.dtype != HALF and (k_in is None or k_in.dtype != HALF) and (v_in is None or v_in.dtype != HALF):
            return grads                                     # (g has q's dtype, the output's)
        return tuple(narrow(d, x.dtype) if d is not None else None for d, x in zip(grads, (q_in, k_in, v_in))) \
            + grads[3:]

    def wide_gradients(self, g, q_in, k_in, v_in, mask, keep):
        """backward's five gradients, in float32 for float16 inputs."""
        q, k, v = _unpacked(*wide(q_in, k_in, v_in))
        need_q, need_k, need_v = _needs(self.needs_input_grad, k_in, v_in)
        w, = self.kept or (self.weights(q, k, mask),)      # (computed again under create_graph)
        dv = (A.swap_last(self.dropped(w, keep)), g) if need_v else None    # each gradient as the (a, b) of its
        dq = dk = None                                                       # product a @ b, taken below
        if need_q or need_k:
            dw = self.dropped(g @ A.swap_last(v), keep)      # da = g v^T,  dw = da * m / (1 - p)
            ds = into("subtract", dw, row_sums(dw * w))      # dw - <dw, w>, in the buffer of dw
            ds *= w                                          # ds = w * (dw - <dw, w>)
            scale = 1.0 / math.sqrt(q.shape[-1])
            ds *= scale                                      # the 1 / sqrt(d) of dq and dk, once
            dq = (ds, k) if need_q else None
            dk = (A.swap_last(ds), q) if need_k else None
        if k_in is None:                                     # qkv: one gradient for the three parts
            return _stacked(dq, dk, dv), None, None, None, None
        if v_in is None:                                     # q and kv
            return _product(dq), _stacked(dk, dv), None, None, None
        return _product(dq), _product(dk), _product(dv), None, None

    @staticmethod
    def weights(q, k, mask):
        """w = softmax(s) along the keys, s = q k^T / sqrt(d) with -inf where masked (..., Tq, Tk); arrays or Tensors.
        A row with no allowed key has max -inf: it is shifted by 0 instead and its zero sum divided by 1 (w = 0)."""
        scale = 1.0 / math.sqrt(q.shape[-1])
        s = q @ A.swap_last(k)
        s *= scale
        if mask is not None:
            s = into("masked", s, mask)                      # -inf where masked
        shift = safe_max(backend.array_of(s), -1)            # (an array: softmax does not depend on it, no gradient)
        e = into("exp", into("subtract", s, shift))          # exp(s - max), in the buffer of s
        total = row_sums(e)
        return into("true_divide", e, A.where(total == 0, 1.0, total))

    def dropped(self, w, keep):
        """w * m / (1 - p), or w itself without dropout."""
        if keep is None:
            return w
        dropout_scale = 1.0 / (1.0 - self.dropout_p)
        return dropped_out(w, keep, dropout_scale)


def _unpacked(q, k, v):
    """(q, k, v) from qkv (3, ...) with k and v None, or from q and kv (2, ...) with v None."""
    if k is None:
        return q[0], q[1], q[2]
    return (q, k[0], k[1]) if v is None else (q, k, v)


def _needs(needs_input_grad, k, v):
    """Whether q, k and v each need a gradient, from the inputs' flags (a packed input's covers its parts)."""
    if k is None:
        return (needs_input_grad[0],) * 3
    if v is None:
        return needs_input_grad[0], needs_input_grad[1], needs_input_grad[1]
    return needs_input_grad[:3]


def _product(pair):
    """a @ b for pair (a, b), or None."""
    return None if pair is None else pair[0] @ pair[1]


def _stacked(*pairs):
    """The gradient of a packed input: the products a @ b of its parts' pairs, stacked along a new first axis (None if
    none is needed). On arrays each product is written into its part of one array (stacking would copy them)."""
    if pairs[0] is None:
        return None
    operands = [x for pair in pairs for x in pair]
    if not all(A.is_array(x) for x in operands):
        return stack([a @ b for a, b in pairs])
    a, b = pairs[0]
    xp = backend.xp_of(a)
    batch = a.shape[:-2] if a.shape[:-2] == b.shape[:-2] else np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    shape = batch + (a.shape[-2], b.shape[-1])   # (broadcast_shapes costs more than the rest when they agree)
    out = xp.empty((len(pairs),) + shape, np.result_type(*operands))
    for part, (a, b) in zip(out, pairs):
        xp.matmul(a, b, out=part)
    return out


def _dropout_words(shape, device, dropout_p, training):
    """The random words of the attention dropout (the weights' shape), or None when there is no dropout: drawn here,
    outside the op, so that a replayed forward (create_graph) drops the same weights."""
    return random_words(shape, device) if training and dropout_p > 0.0 else None


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
    w_shape = np.broadcast_shapes(q.shape[:-2], k.shape[:-2]) + scores_shape[-2:]  # the weights' (v's batch dims aside)
    if mask is not None:
        w_shape = np.broadcast_shapes(w_shape, mask.shape)
    words = _dropout_words(w_shape, q.device, dropout_p, training)
    return ScaledDotProductAttention.apply(q, k, v, mask, words, dropout_p=dropout_p if training else 0.0)


def self_attention(qkv, mask=None, dropout_p=0.0, training=True):
    """qkv (3, ..., T, d): q, k, v stacked, as one projection makes them -> (..., T, d): the same as
    scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], mask, dropout_p, training), with one gradient array for qkv."""
    if not isinstance(qkv, Tensor) or qkv.ndim < 3 or qkv.shape[0] != 3:
        raise ValueError(f"self_attention: expected qkv (3, ..., T, d), got {getattr(qkv, 'shape', type(qkv))}")
    scores_shape = qkv.shape[1:-1] + qkv.shape[-2:-1]
    mask = _checked(mask, dropout_p, scores_shape, qkv.device, "self_attention")
    if qkv.shape[-2] == 0:
        return scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], mask, dropout_p, training)
    words = _dropout_words(scores_shape, qkv.device, dropout_p, training)
    return ScaledDotProductAttention.apply(qkv, None, None, mask, words, dropout_p=dropout_p if training else 0.0)


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
    words = _dropout_words(scores_shape, q.device, dropout_p, training)
    return ScaledDotProductAttention.apply(q, kv, None, mask, words, dropout_p=dropout_p if training else 0.0)


def _checked(mask, dropout_p, scores_shape, device, who):
    """The mask as a bool array on device (None stays None), after checking it and dropout_p."""
    if not 0.0 <= dropout_p < 1.0:
        raise ValueError(f"{who}: dropout_p must be in [0, 1), got {dropout_p}")
    if mask is not None:
        mask = backend.array_of(mask)
        if not backend.is_array(mask):
            mask = np.asarray(mask)
        if mask.dtype != np.bool_:
            raise TypeError(f"{who}: mask must be bool (True = may attend), got dtype {mask.dtype}")
        if not A.broadcasts_to(tuple(mask.shape), scores_shape):
            raise ValueError(f"{who}: mask of shape {tuple(mask.shape)} does not broadcast to the scores' shape "
                             f"{scores_shape} (..., Tq, Tk)")
        mask = backend.to_device(mask, device)
    return mask
