"""Cross-entropy with label smoothing: log-softmax and negative log-likelihood fused into one Function.

The forward walks the rows in cache-sized blocks (rows.py); the GPU's fused kernels are in
minitorch/kernels/cross_entropy.py.
"""
import numpy as np

from .. import backend
from ..core import Function
from ..ops import array_ops as A
from ..tensor import Tensor
from .precision import narrow, wide
from .rows import into, joined_rows, row_blocks, row_sum, row_sums

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
    Saved: x and the target (backward points ignored rows at class 0 again, with the bool mask of valid rows); kept:
    each row's max and S (two numbers a row), so that backward makes E in one pass; E itself is made again (a (M, C)
    array is not kept).
    Both walk the rows in blocks that stay in the CPU's cache (rows.py; one block on a GPU): the forward makes no
    (M, C) array (z and E of one block at a time, in one buffer), the backward makes E and dx of a block at a time
    (in one buffer, the (1 - e) one_hot(t) term taken at the target entries alone), copied into dx made once.
    float16 logits: both compute in float32 (precision.py); the loss is float32, dx float16.
    """
    needs_float = True

    def forward(self, x, target, *, ignore_index, label_smoothing, reduction):
        xp = backend.xp_of(x)
        n_rows, n_classes = x.shape
        e = label_smoothing
        t, valid = self.targets(target, ignore_index)
        self.save_for_backward(x, target)
        self.e, self.reduction, self.ignore_index = e, reduction, ignore_index
        x = wide(x)
        row_max = x.max(axis=1, keepdims=True)
        S, z_sum = xp.empty(n_rows, x.dtype), xp.zeros(n_rows, x.dtype)
        blocks = row_blocks(n_rows, x.itemsize * n_classes, backend.device_of(x))
        buffer = xp.empty((blocks[0].stop - blocks[0].start if blocks else 0, n_classes), x.dtype)
        for r in blocks:
            z = xp.subtract(x[r], row_max[r], out=buffer[:len(row_max[r])])   # z = x - max
            if e:
                z_sum[r] = row_sum(z)                                           # sum_c z
            S[r] = row_sum(xp.exp(z, out=z))                                   # S = sum_c exp(z)
        self.kept = row_max, S[:, None]                                       # kept for backward
        z_target = x[xp.arange(n_rows), t] - row_max[:, 0]
        loss = xp.log(S) - (1.0 - e) * z_target
        if e:
            loss -= (e / n_classes) * z_sum
        loss *= valid
        if reduction == "none":
            return loss
        if reduction == "sum":
            return xp.asarray(loss.sum())
        return xp.asarray(loss.sum() / n_valid_of(valid, x.dtype))

    @staticmethod
    def targets(target, ignore_index):
        """(t, valid): the target with ignored rows pointed at class 0 (any class will do: their loss is zeroed), and
        the bool mask of the rows not ignored."""
        valid = target != ignore_index
        return backend.xp_of(target).where(valid, target, 0), valid

    def backward(self, g):
        x, target = self.saved_tensors
        t, valid = self.targets(target, self.ignore_index)
        n_rows, n_classes = x.shape
        dtype, (x, g) = x.dtype, wide(x, g)
        if self.reduction == "mean":
            g = g / n_valid_of(valid, x.dtype)
        s = (g * valid).reshape(-1, 1)                       # s_r, (M, 1); g is () for mean/sum, (M,) for none
        blocks = row_blocks(n_rows, x.dtype.itemsize * n_classes, backend.device_of(t))
        row_max, S = self.kept or (A.max(x, 1, keepdim=True), None)   # (S None: summed per block below)
        return narrow(joined_rows(lambda r: self.rows_gradient(x[r], s[r], t[r], row_max[r],
                                                               S if S is None else S[r]), blocks, x), dtype), None

    def rows_gradient(self, x, s, t, row_max, S):
        """dx of a block of rows (x (m, C), s (m, 1), t (m,), the rows' max and S (m, 1), S None to sum it here), in
        one buffer that stays in cache until the join."""
        e, n_classes = self.e, x.shape[1]
        dx = into("exp", x - row_max)                        # E
        dx = into("multiply", dx, s / (row_sums(dx) if S is None else S))   # p * s
        if e:
            dx -= s * (e / n_classes)                        # - s e / C
        if A.is_array(dx):                                   # - s (1 - e) one_hot(t): the m target entries only
            dx[backend.xp_of(t).arange(len(t)), t] -= (1.0 - e) * s[:, 0]
        else:                                                # (on Tensors, create_graph: as a dense product)
            dx = dx - s * (1.0 - e) * (t[:, None] == backend.xp_of(t).arange(n_classes))
        return dx


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
    t = backend.array_of(target)
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
