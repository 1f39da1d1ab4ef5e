"""R-Drop (Liang et al. 2021, fit --rdrop ALPHA): each batch goes through the model twice, with two dropout masks,
and a symmetric KL term pulls the two output distributions together.

    loss = (CE_1 + CE_2 + alpha * sum_t 1/2 (KL(p1_t || p2_t) + KL(p2_t || p1_t))) / (2 n)

CE_i: pass i's label-smoothed cross-entropy summed over the n target tokens (padding left out, as is the KL's t), so
with alpha = 0 this is the plain loss's mean over tokens, and alpha means what it means in the paper and in
fairseq's criterion. The two passes are one forward of the batch stacked on itself (rows i and B + i: the same
sentence, independent masks). Built from engine ops, so autograd gives the gradient; per position it is
    d/dz1 [KL(p1||p2) + KL(p2||p1)] = p1 * (l1 - l2) + p1 - p2 - p1 * KL(p1||p2)      (l = log_softmax(z))
(tests/test_regularisers.py checks it and the composition against finite differences in float64).
"""
import numpy as np

import minitorch.functional as F
from minitorch import Tensor, backend

from .parallel import share_loss
from .step import QUIET, TrainStep
from .tokenizer import PAD_ID


def twice(batch):
    """(src, tgt_in, tgt_out) host arrays (B, .) -> the same stacked on themselves (2B, .)."""
    return tuple(np.concatenate([a, a], axis=0) for a in batch)


def symmetric_kl(logits, tgt_out):
    """logits (2B, T, V) of a batch given twice, tgt_out (2B, T) -> sum over the non-padding positions t of the first
    half of 1/2 (KL(p1_t || p2_t) + KL(p2_t || p1_t)), a scalar Tensor; 1/2 (KL + KL) = 1/2 sum (p1 - p2)(l1 - l2)."""
    B = logits.shape[0] // 2
    log_p = F.log_softmax(logits, dim=-1)
    l1, l2 = log_p[:B], log_p[B:]
    t = tgt_out.data if isinstance(tgt_out, Tensor) else backend.to_device(tgt_out, logits.device)
    real = Tensor._make((t[:B] != PAD_ID).astype(logits.dtype)[..., None])   # (B, T, 1): 0 at padding
    return (((l1.exp() - l2.exp()) * (l1 - l2)) * real).sum() * 0.5


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
        with np.errstate(**QUIET):
            return rdrop_loss(self.model(src, tgt_in), tgt_out, self.label_smoothing, self.alpha, n)
