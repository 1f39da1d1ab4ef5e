"""R-Drop (Liang et al. 2021, fit --rdrop ALPHA): each batch goes through the model twice, with two dropout masks,
and a symmetric KL term pulls the two output distributions together.

    loss = (CE_1 + CE_2 + alpha * sum_t 1/2 (KL(p1_t || p2_t) + KL(p2_t || p1_t))) / (2 n)

CE_i: pass i's label-smoothed cross-entropy summed over the n target tokens (padding left out, as is the KL's t), so
with alpha = 0 this is the plain loss's mean over tokens, and alpha means what it means in the paper and in
fairseq's criterion. The two passes are one forward of the batch stacked on itself (rows i and B + i: the same
sentence, independent masks). The KL term is one Function (SymmetricKL) with its backward beside it, the derivation
in its docstring, since composed from engine ops (composed_symmetric_kl, also its create_graph form) it made a step
cost about 3.5 times a plain one on the small preset; tests/training/test_regularisers.py checks both and the whole loss
against central differences in float64.
"""
import numpy as np

import minitorch.functional as F
from minitorch import Tensor, backend
from minitorch.autograd import Function, grad
from minitorch.core import Value

from ..data.tokenizer import PAD_ID
from .loss import share_loss
from .step import QUIET, TrainStep


def twice(batch):
    """(src, tgt_in, tgt_out) host arrays (B, .) -> the same stacked on themselves (2B, .)."""
    return tuple(np.concatenate([a, a], axis=0) for a in batch)


def symmetric_kl(logits, tgt_out):
    """logits (2B, T, V) of a batch given twice, tgt_out (2B, T) -> sum over the non-padding positions t of the first
    half of 1/2 (KL(p1_t || p2_t) + KL(p2_t || p1_t)), a scalar Tensor (SymmetricKL)."""
    t = tgt_out.data if isinstance(tgt_out, Tensor) else backend.to_device(tgt_out, logits.device)
    B = logits.shape[0] // 2
    return SymmetricKL.apply(logits, (t[:B] != PAD_ID).astype(logits.dtype))


def composed_symmetric_kl(logits, real):
    """SymmetricKL from engine ops (what create_graph=True differentiates, and the tests' second opinion):
    1/2 (KL(p1||p2) + KL(p2||p1)) = 1/2 sum_v (p1 - p2)(l1 - l2), masked by real (B, T) after the sum over v."""
    B = logits.shape[0] // 2
    log_p = F.log_softmax(logits, dim=-1)
    p = log_p.exp()
    real = real if isinstance(real, Tensor) else Tensor._make(real)
    return (((p[:B] - p[B:]) * (log_p[:B] - log_p[B:])).sum(dim=-1) * real).sum() * 0.5


class SymmetricKL(Function):
    """s = 1/2 sum_t m_t sum_v (p1 - p2)(l1 - l2) of logits x (2B, T, V) whose halves are the two passes, l the
    log-softmax, p = exp(l), m (B, T) the mask of real target positions; one pass over x each way instead of the
    composition's dozen. With d = l1 - l2 and k_i = sum_v p_i d per position (l = log_softmax(z): dz = dl - p sum dl;
    ds/dl1 = p1 d + p1 - p2, whose sum over v is k1):
        ds/dz1 = m/2 (p1 (d - k1) + p1 - p2),    ds/dz2 = m/2 (p2 (k2 - d) + p2 - p1)
    Saves x and m only; backward recomputes l and p from x (one log-softmax pass more than saving p and d, which
    are 1.5 times x's size). Under create_graph=True it differentiates composed_symmetric_kl, the same value from
    engine ops.
    """
    needs_float = True

    def forward(self, x, real):
        self.save_for_backward(x, real)
        p, d = _probabilities_and_gap(x)
        B = d.shape[0]
        return backend.xp_of(x).asarray(0.5 * (((p[:B] - p[B:]) * d).sum(axis=-1) * real).sum())

    def backward(self, g):
        x, real = self.saved_tensors
        if isinstance(g, Value):  # create_graph=True: x is the graph's Tensor; differentiate the composition
            return grad(composed_symmetric_kl(x, real), x, g, create_graph=True)[0], None
        p, d = _probabilities_and_gap(x)
        B = d.shape[0]
        p1, p2 = p[:B], p[B:]
        s = (0.5 * g * real)[..., None].astype(p.dtype, copy=False)
        dx = backend.xp_of(p).empty_like(p)
        dx[:B] = s * (p1 * (d - (p1 * d).sum(axis=-1, keepdims=True)) + p1 - p2)
        dx[B:] = s * (p2 * ((p2 * d).sum(axis=-1, keepdims=True) - d) + p2 - p1)
        return dx, None


def _probabilities_and_gap(x):
    """x (2B, T, V) -> p = softmax(x) (2B, T, V) and d = l1 - l2 (B, T, V), l the log-softmax of each half."""
    xp = backend.xp_of(x)
    B = x.shape[0] // 2
    log_p = x - x.max(axis=-1, keepdims=True)
    p = xp.exp(log_p)
    total = p.sum(axis=-1, keepdims=True)
    log_p -= xp.log(total)
    p /= total
    return p, log_p[:B] - log_p[B:]


def rdrop_loss(logits, tgt_out, label_smoothing, alpha, n_tokens=None):
    """logits (2B, T, V), tgt_out (2B, T) of a batch given twice -> the R-Drop loss above (a scalar Tensor); n_tokens:
    the whole batch's target tokens (a rank's share of a batch), else those of tgt_out's first half."""
    n = n_tokens if n_tokens is not None else int((backend.to_numpy(tgt_out) != PAD_ID).sum()) // 2
    ce = share_loss(logits, tgt_out, label_smoothing, 2 * n)   # both passes' token sum over 2n
    return ce + symmetric_kl(logits, tgt_out) * (alpha / (2 * n))


class RDropStep(TrainStep):
    """TrainStep whose loss is R-Drop's: the batch twice in one forward, plus the symmetric KL term (alpha)."""

    def __init__(self, *args, alpha, **kw):
        super().__init__(*args, **kw)
        self.alpha = alpha

    def forward(self, batch, n_tokens=None):
        if batch is None:
            return None
        n = n_tokens if n_tokens is not None else int((batch[2] != PAD_ID).sum())   # counted on the host
        src, tgt_in, tgt_out = (backend.to_device(a, self.device) for a in twice(batch))
        with np.errstate(**QUIET), self.casting():
            return rdrop_loss(self.model(src, tgt_in), tgt_out, self.label_smoothing, self.alpha, n)
