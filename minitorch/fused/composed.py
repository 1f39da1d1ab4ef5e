"""The fused ops written from primitive ops, so that autograd derives their backward.

They are the reference that the hand-written fused versions are tested against, and the baseline of the
fused-op benchmark. Same signatures as the fused ops.
"""
import math

from .. import backend
from ..ops import Dropout, random_words
from ..functions import where
from ..tensor import Tensor


def softmax(x, dim=-1):
    z = x - x.amax(dim=dim, keepdim=True).detach()
    e = z.exp()
    return e / e.sum(dim=dim, keepdim=True)


def log_softmax(x, dim=-1):
    z = x - x.amax(dim=dim, keepdim=True).detach()
    return z - z.exp().sum(dim=dim, keepdim=True).log()


def cross_entropy(logits, target, ignore_index=-100, label_smoothing=0.0, reduction="mean"):
    n_classes = logits.shape[-1]
    t = backend.array_of(target)
    xp = backend.xp_of(logits.data)
    t = backend.to_device(t, logits.device)
    valid = t != ignore_index
    safe_t = xp.where(valid, t, 0)
    one_hot = (safe_t[..., None] == xp.arange(n_classes)).astype(logits.dtype)
    q = (1.0 - label_smoothing) * one_hot + label_smoothing / n_classes
    loss = -(log_softmax(logits, dim=-1) * Tensor._make(q)).sum(dim=-1) * Tensor._make(valid.astype(logits.dtype))
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / max(int(valid.sum()), 1)


def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    dims = tuple(range(x.ndim - len(shape), x.ndim))
    mu = x.mean(dim=dims, keepdim=True)
    xc = x - mu
    var = (xc * xc).mean(dim=dims, keepdim=True)
    y = xc / (var + eps).sqrt()
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y


def scaled_dot_product_attention(q, k, v, mask=None, dropout_p=0.0, training=True, keep=None):
    """keep: a dropout mask (bool, the weights' shape) to use instead of a fresh draw (the fused op's own)."""
    scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))
    if mask is not None:
        m = backend.array_of(mask)
        scores = scores.masked_fill(~m, -1e30 if scores.dtype.itemsize > 4 else -1e9)
        w = softmax(scores, dim=-1)
        # a row with nothing to attend to gives zeros, not a uniform average
        any_valid = m.any(axis=-1, keepdims=True)
        w = where(Tensor._make(backend.xp_of(w.data).broadcast_to(any_valid, w.shape)), w, 0.0)
    else:
        w = softmax(scores, dim=-1)
    if keep is not None:
        w = w * Tensor._make(keep) * (1.0 / (1.0 - dropout_p))
    elif training and dropout_p > 0.0:
        w = Dropout.apply(w, random_words(w.shape, w.device), p=dropout_p)
    return w @ v


def lstm_cell(gates, c_prev):
    H = c_prev.shape[-1]
    i, f = gates[..., :H].sigmoid(), gates[..., H:2 * H].sigmoid()
    g, o = gates[..., 2 * H:3 * H].tanh(), gates[..., 3 * H:].sigmoid()
    c = f * c_prev + i * g
    return o * c.tanh(), c
