"""ScaledDotProductAttention on the GPU, with fuse kernels (three for the masked softmax, two for its backward, one for
dropout after the draw) on C-contiguous copies that the batched matmuls read without copying them again. (The CPU
runs the reference op, fused/attention.py.)

It saves what the reference saves (q, k, v, the mask and the bool keep mask) and keeps w, as the reference keeps it
(op.kept): one (..., Tq, Tk) array for one matmul and a softmax less in backward, with its C-contiguous copies of q,
k and v^T (a copy in backward would be a launch more per call). A packed input's (qkv, kv) gradient is one array
whose parts the matmuls write, where stacking would copy them.

float16 q, k, v: the products run in float16 (cuBLAS sums them in float32), the softmax's row max, sum and output,
<g, out> and ds are computed in float32 inside their kernels (in_body) and stored as float16 (w, ds)."""
import math

import numpy as np

from .. import backend
from ..core import kernel
from ..fused.attention import ScaledDotProductAttention, _unpacked
from ..fused.precision import in_body, scalar_type
from ..ops.dropout import keep_threshold
from .dropout import dropout_kernel, scale_by_mask


def _swap(a):
    return a.swapaxes(-1, -2)


class _Parts:
    """Where the gradients of q, k, v go: `parts` holds (input, part) for each, part None for an input of its own,
    `shapes` the inputs' shapes (Python values: the kernels' backward allocates a packed input's gradient once)."""

    def set_parts(self, q, k, v):
        self.parts = ((0, 0), (0, 1), (0, 2)) if k is None else ((0, None), (1, 0), (1, 1)) if v is None else \
            ((0, None), (1, None), (2, None))
        self.shapes = [a.shape for a in (q, k, v) if a is not None]

    def needs_qkv_grad(self):
        return tuple(self.needs_input_grad[i] for i, _ in self.parts)

    def gradient_buffers(self, g):
        """An empty gradient array for each packed input that needs one (None for the others)."""
        xp = backend.xp_of(g)
        packed = {i for i, part in self.parts if part is not None and self.needs_input_grad[i]}
        return [xp.empty(shape, g.dtype) if n in packed else None for n, shape in enumerate(self.shapes)]

    def product(self, a, b, which, grads):
        """a @ b, the gradient of q, k or v (which 0, 1, 2): written into its part of a packed input's gradient."""
        i, part = self.parts[which]
        return backend.xp_of(a).matmul(a, b, out=None if part is None else grads[i][part])

    def gradients(self, grads, dq, dk, dv):
        """The op's five gradients: a packed input's buffer in place of its parts'."""
        out = [grad if grad is not None else d for grad, d in zip(grads, (dq, dk, dv))]
        return tuple(out + [None] * (5 - len(out)))


def _scores_for(s, mask):
    """s itself, or a copy broadcast to the mask's shape when the mask has batch dims that q k^T lacks."""
    if mask is None or np.broadcast_shapes(s.shape, mask.shape) == s.shape:
        return s
    xp = backend.xp_of(s)
    return xp.ascontiguousarray(xp.broadcast_to(s, np.broadcast_shapes(s.shape, mask.shape)))


@kernel(ScaledDotProductAttention, "cuda")
class ScaledDotProductAttentionCuda(_Parts, ScaledDotProductAttention):
    """Fuse kernels: one copies q, k, v, k^T and v^T C-contiguous (CuPy copies each batched matmul operand that is
    not, transposes included), three make the masked softmax with its scale (row max, sum of exponentials, w written
    over s and w^T beside it), one the dropout after the entry's draw; backward two (<dw, w> = <g, out> row by row,
    then ds with the scale folded in, ds^T beside it, after g is copied C-contiguous where it is not) and one more
    with dropout (a^T from w^T and the mask). Saves the reference's q, k, v, mask and keep; keeps the copies q, k,
    v^T, and w, w^T and the output."""

    def forward(self, q, k, v, mask, words, *, dropout_p):
        xp = backend.xp_of(q)
        self.set_parts(q, k, v)
        inputs = q, k, v, mask
        q, k, v, k_t, v_t = _contiguous_parts(xp, *_unpacked(q, k, v))
        self.scale, self.dropout_p = 1.0 / math.sqrt(q.shape[-1]), dropout_p
        scale = scalar_type(q.dtype)(self.scale)
        s = _scores_for(q @ k_t, mask)
        mask = True if mask is None else mask                                # where(True, ...) keeps every score
        row_max = _masked_row_max(s, mask, scale)[..., None]
        total = _masked_exp_sum(s, mask, scale, row_max)[..., None]
        w_t = _transposed_buffer(s)
        _masked_softmax(s, mask, scale, row_max, total, _swap(w_t))          # written over s (returning it would
        w = s                                                                # make CuPy copy it): w = softmax(s)
        a, keep = w, None
        if words is not None:
            self.dropout_scale = q.dtype.type(1.0 / (1.0 - dropout_p))
            a, keep = dropout_kernel(w, words, keep_threshold(dropout_p, xp), self.dropout_scale)
        out = a @ v
        self.save_for_backward(*inputs, keep)
        self.kept = q, k, v_t, w, w_t, out
        return out

    def backward(self, g):
        xp = backend.xp_of(g)
        keep = self.saved_tensors[4]
        q, k, v_t, w, w_t, out = self.kept
        need_q, need_k, need_v = self.needs_qkv_grad()
        dw_dot_w = _row_dot(g, out)[..., None] if need_q or need_k else None
        g = xp.ascontiguousarray(g)                                          # one copy for its products, if any
        grads = self.gradient_buffers(g)
        dropout_scale = q.dtype.type(1) if keep is None else self.dropout_scale
        a_t = w_t if keep is None else scale_by_mask(w_t, _swap(keep), dropout_scale)
        dv = self.product(a_t, g, 2, grads) if need_v else None              # dv = a^T g
        if not (need_q or need_k):
            return self.gradients(grads, None, None, dv)
        keep = True if keep is None else keep
        da = g @ v_t                                                         # da = g v^T
        ds_t = _transposed_buffer(da)
        _softmax_grad(da, keep, dropout_scale, w, dw_dot_w, scalar_type(q.dtype)(self.scale), _swap(ds_t))
        ds = da                                                              # written over da, and ds^T beside it
        dq = self.product(ds, k, 0, grads) if need_q else None               # ds carries the 1 / sqrt(d)
        dk = self.product(ds_t, q, 1, grads) if need_k else None
        return self.gradients(grads, dq, dk, dv)


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


def _safe_max(xp, m):
    """A row max of -inf (a fully masked row) as 0, so that the row's exponentials are exp(-inf) = 0, not nan (inside
    a kernel body)."""
    return xp.where(m == -math.inf, 0.0, m)


def _masked_exp(xp, s, mask, scale, row_max):
    """exp(s * scale - max), 0 where masked (exp(-inf): a masked score above the row's max cannot overflow)."""
    return xp.exp(xp.where(mask, in_body(xp, s) * scale - _safe_max(xp, row_max), -math.inf))


@backend.fuse
def _masked_row_max(xp, s, mask, scale):
    """(..., Tq) max of the scaled scores that may be attended to (-inf for none)."""
    return xp.max(xp.where(mask, in_body(xp, s) * scale, -math.inf), axis=-1)


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
def _row_dot(xp, g, out):
    """(..., Tq) <dw, w> over the keys, computed as <g, out> over d_k (as FlashAttention's backward does; equal,
    dropout included: out = a v, a = w * m / (1 - p), dw = (g v^T) * m / (1 - p), so <dw, w> = <g v^T, a> = <g, a v>).
    It cannot also copy g: a reduction's pre-map gets its arguments by value on a GPU, so a write there is lost."""
    return xp.sum(in_body(xp, g) * in_body(xp, out), axis=-1)


@backend.fuse
def _softmax_grad(xp, da, keep, dropout_scale, w, dw_dot_w, scale, ds_t):
    """ds = w * (dw - <dw, w>) / sqrt(d), written into da and into ds^T's swapped view."""
    ds = in_body(xp, w) * (in_body(xp, da) * keep * dropout_scale - dw_dot_w) * scale
    ds_t[...] = ds
    da[...] = ds
