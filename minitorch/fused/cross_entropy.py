"""Cross-entropy with label smoothing: log-softmax and negative log-likelihood fused into one Function."""
import numpy as np

from .. import backend
from ..autograd import Function
from ..tensor import Tensor

REDUCTIONS = ("mean", "sum", "none")


class CrossEntropy(Function):
    """loss_r = -sum_c q_rc log p_rc for each row r of logits x (M, C) with target t (M,), p = softmax(x_r).

    The target distribution is q = (1 - e) one_hot(t) + e / C (label smoothing e). With z = x - max(x) and
    lse = log(sum(exp(z))), log p = z - lse, and since sum_c q_c = 1 the loss needs no log p array:
        loss_r = lse_r - (1 - e) z_r[t_r] - (e / C) sum_c z_rc
    Backward, with s_r the gradient reaching row r (g, g / n_valid or g_r; 0 on ignored rows):
        d loss_r / d x_rc = p_rc - q_rc          so  dx = s[:, None] * (p - q)
    Only p (M, C), in the logits' dtype, is saved for the backward.
    """
    needs_float = True

    def forward(self, x, target, ignore_index, label_smoothing, reduction):
        xp = backend.xp_of(x)
        n_rows, n_classes = x.shape
        e = label_smoothing
        rows = xp.arange(n_rows)
        valid = target != ignore_index
        safe_target = xp.where(valid, target, 0)  # any class will do for an ignored row; its loss is zeroed
        p = x - x.max(axis=1, keepdims=True)                            # z
        loss = -(1.0 - e) * p[rows, safe_target]
        if e:
            loss -= (e / n_classes) * p.sum(axis=1)
        xp.exp(p, out=p)                                                # the one exponential, in place
        total = p.sum(axis=1)
        loss += xp.log(total)                                           # + lse
        p /= total[:, None]                                             # p = softmax(x)
        loss *= valid
        self.p, self.target, self.valid, self.e = p, safe_target, valid, e
        self.reduction, self.n_valid = reduction, int(valid.sum())
        if reduction == "none":
            return loss
        if reduction == "sum":
            return xp.asarray(loss.sum())
        # "mean" over non-ignored rows; with every row ignored the loss is 0 (PyTorch gives nan)
        return xp.asarray(loss.sum() / max(self.n_valid, 1))

    def backward(self, g):
        p, e = self.p, self.e
        n_rows, n_classes = p.shape
        if self.reduction == "mean":
            g = g / max(self.n_valid, 1)
        scale = g * self.valid                                          # g is () for mean/sum, (M,) for none
        scale = scale.astype(p.dtype, copy=False)[:, None]              # (M, 1): s_r
        dx = p * scale                                                  # s p
        if e:
            dx -= (e / n_classes) * scale                               # - s e / C
        rows = backend.xp_of(p).arange(n_rows)
        dx[rows, self.target] -= (1.0 - e) * scale[:, 0]                # - s (1 - e) one_hot
        return dx, None


def cross_entropy(logits, target, ignore_index=-100, label_smoothing=0.0, reduction="mean"):
    """logits (N, C) with target (N,), or (N, T, C) with (N, T), int class ids -> the loss (a scalar, or target's
    shape for reduction="none"). Targets equal to ignore_index add nothing; "mean" divides by their count."""
    if not isinstance(logits, Tensor):
        raise TypeError(f"cross_entropy: logits must be a Tensor, got {type(logits).__name__}")
    if reduction not in REDUCTIONS:
        raise ValueError(f"cross_entropy: reduction must be one of {REDUCTIONS}, got {reduction!r}")
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must be in [0, 1], got {label_smoothing}")
    t = target.data if isinstance(target, Tensor) else target
    if not backend.is_array(t):
        t = np.asarray(t)
    if t.dtype.kind not in "iu":
        raise TypeError(f"cross_entropy: target must hold integer class ids, got dtype {t.dtype}")
    if logits.ndim not in (2, 3) or tuple(t.shape) != logits.shape[:-1]:
        raise ValueError(f"cross_entropy: expected logits (N, C) with target (N,) or logits (N, T, C) with target "
                         f"(N, T); got logits {logits.shape} and target {tuple(t.shape)}")
    n_classes = logits.shape[-1]
    t = backend.to_device(t, logits.device)
    valid = t != ignore_index
    if bool(valid.any()):
        low, high = int(t[valid].min()), int(t[valid].max())
        if low < 0 or high >= n_classes:
            raise IndexError(f"cross_entropy: target ids must lie in [0, {n_classes}) or equal ignore_index="
                             f"{ignore_index}; got values from {low} to {high}")
    out = CrossEntropy.apply(logits.reshape(-1, n_classes), t.reshape(-1), ignore_index=ignore_index,
                             label_smoothing=float(label_smoothing), reduction=reduction)
    return out.reshape(t.shape) if reduction == "none" else out
