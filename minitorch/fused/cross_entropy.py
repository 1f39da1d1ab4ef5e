"""Cross-entropy with label smoothing: log-softmax and negative log-likelihood fused into one Function.

The faster versions (cache-sized row blocks on the CPU, fused kernels on the GPU) are in
minitorch/kernels/cross_entropy.py.
"""
import numpy as np

from .. import backend
from ..core import Function
from ..ops import array_ops as A
from ..tensor import Tensor

REDUCTIONS = ("mean", "sum", "none")


def n_valid_of(valid, dtype):
    """The count of rows not ignored as a 0-d array of `dtype`, at least 1: with every row ignored the mean loss is 0
    (PyTorch gives nan). It stays on the device: reading it to the host would stall a GPU."""
    return backend.xp_of(valid).maximum(valid.sum(dtype=dtype), 1)


class CrossEntropy(Function):
    """loss_r = -sum_c q_rc log p_rc for each row r of logits x (M, C) with target t (M,), p = softmax(x_r).

    The target distribution is q = (1 - e) one_hot(t) + e / C (label smoothing e). With z = x - max(x),
    E = exp(z) and S = sum_c E, log p = z - log S, and since sum_c q_c = 1 the loss needs no log p array:
        loss_r = log S_r - (1 - e) z_r[t_r] - (e / C) sum_c z_rc
    Backward (docs/backprop.md section 3), with s_r the gradient reaching row r (g, g / n_valid or g_r; 0 on
    ignored rows), p = E / S:
        d loss_r / d x_rc = p_rc - q_rc,   so   dx = E * (s / S) - s e / C - s (1 - e) one_hot(t)
    Saved: x, the target (ignored rows pointed at class 0) and the bool mask of valid rows; E and S are recomputed.
    """
    needs_float = True

    def forward(self, x, target, *, ignore_index, label_smoothing, reduction):
        xp = backend.xp_of(x)
        n_rows, n_classes = x.shape
        e = label_smoothing
        valid = target != ignore_index
        t = xp.where(valid, target, 0)  # any class will do for an ignored row; its loss is zeroed
        self.save_for_backward(x, t, valid)
        self.e, self.reduction = e, reduction
        z = x - x.max(axis=1, keepdims=True)
        E = xp.exp(z)
        S = E.sum(axis=1)
        z_sum = z.sum(axis=1)
        loss = (xp.log(S) - (1.0 - e) * z[xp.arange(n_rows), t] - (e / n_classes) * z_sum) * valid
        if reduction == "none":
            return loss
        if reduction == "sum":
            return xp.asarray(loss.sum())
        return xp.asarray(loss.sum() / n_valid_of(valid, x.dtype))

    def backward(self, g):
        x, t, valid = self.saved_tensors
        e, n_classes = self.e, x.shape[1]
        if self.reduction == "mean":
            g = g / n_valid_of(valid, x.dtype)
        s = (g * valid).reshape(-1, 1)                      # s_r, (M, 1); g is () for mean/sum, (M,) for none
        E = A.exp(x - A.max(x, 1, keepdim=True))
        S = A.sum(E, 1, keepdim=True)
        one_hot = t[:, None] == backend.xp_of(t).arange(n_classes)
        q = (one_hot * (1.0 - e) + e / n_classes).astype(x.dtype)  # a constant: built from the integer target
        dx = E * (s / S) - s * q
        return dx, None


def cross_entropy(logits, target, ignore_index=-100, label_smoothing=0.0, reduction="mean"):
    """logits (N, C) with target (N,), or (N, T, C) with (N, T), int class ids -> the loss (a scalar, or target's
    shape for reduction="none"). Targets equal to ignore_index add nothing; "mean" divides by the count of the others.
    Host targets are range-checked; targets already on the GPU are not (see backend.out_of_range)."""
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
    bad = backend.out_of_range(t, n_classes, ignore=ignore_index)  # on the host, before the move (device targets
    if bad:                                                          # are not read: that would stall the GPU)
        raise IndexError(f"cross_entropy: target ids must lie in [0, {n_classes}) or equal ignore_index="
                         f"{ignore_index}; got values from {bad[0]} to {bad[1]}")
    t = backend.to_device(t, logits.device)
    out = CrossEntropy.apply(logits.reshape(-1, n_classes), t.reshape(-1), ignore_index=ignore_index,
                             label_smoothing=float(label_smoothing), reduction=reduction)
    return out.reshape(t.shape) if reduction == "none" else out
