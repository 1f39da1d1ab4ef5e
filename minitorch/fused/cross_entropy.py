"""Cross-entropy with label smoothing: log-softmax and negative log-likelihood fused into one Function."""
import numpy as np

from .. import backend
from ..core import Function
from ..tensor import Tensor
from . import composed
from .rows import grad_buffer, row_blocks, row_sum
from .softmax import exp_sum_of_rows, max_of_rows

REDUCTIONS = ("mean", "sum", "none")


class CrossEntropy(Function):
    """loss_r = -sum_c q_rc log p_rc for each row r of logits x (M, C) with target t (M,), p = softmax(x_r).

    The target distribution is q = (1 - e) one_hot(t) + e / C (label smoothing e). With z = x - max(x),
    E = exp(z) and S = sum_c E, log p = z - log S, and since sum_c q_c = 1 the loss needs no log p array:
        loss_r = log S_r - (1 - e) z_r[t_r] - (e / C) sum_c z_rc
    Backward (docs/backprop.md section 3), with s_r the gradient reaching row r (g, g / n_valid or g_r; 0 on
    ignored rows), p = E / S:
        d loss_r / d x_rc = p_rc - q_rc,   so   dx = E * (s / S) - s e / C - s (1 - e) one_hot(t)
    Only E (M, C) in the logits' dtype and S (M,) are saved: the division by S happens on the (M, 1) side, and
    the backward writes dx into E when no second backward follows (rows.grad_buffer). Row sums and cache-sized row
    blocks: rows.py.
    On the GPU (kernels below) the forward is three row reductions (max, S, sum_c q_c z_c with q built from a column
    index) and the loss's sum, and the backward one kernel, dx = s * (exp(z) / S - q); x, the row max and S are saved.
    """
    needs_float = True

    def composed(self, x, target):  # what create_graph=True differentiates (docs/backprop.md)
        t = backend.xp_of(self.target).where(self.valid, self.target, -1)  # -1 marks the ignored rows
        return composed.cross_entropy(x, t, ignore_index=-1, label_smoothing=self.e, reduction=self.reduction)

    def forward(self, x, target, ignore_index, label_smoothing, reduction):
        xp = backend.xp_of(x)
        n_rows, n_classes = x.shape
        e = label_smoothing
        self.fused = backend.fused_path(x)
        if self.fused:
            return self.forward_fused(x, target, ignore_index, e, reduction)
        valid = target != ignore_index
        safe_target = xp.where(valid, target, 0)  # any class will do for an ignored row; its loss is zeroed
        E = xp.empty_like(x)
        row_max = xp.empty((n_rows, 1), x.dtype)
        S = xp.empty(n_rows, x.dtype)
        z_sum = xp.zeros(n_rows, x.dtype)
        ones = xp.ones(n_classes, x.dtype)  # made once for every block's row sums
        for r in row_blocks(n_rows, x.itemsize * n_classes, backend.device_of(x)):
            row_max[r] = x[r].max(axis=1, keepdims=True)
            z = xp.subtract(x[r], row_max[r], out=E[r])                 # z, in the buffer that will hold E
            if e:
                z_sum[r] = row_sum(z, ones)                             # sum_c z
            xp.exp(z, out=E[r])                                         # the one exponential, in place: E
            S[r] = row_sum(E[r], ones)                                  # S
        z_target = x[xp.arange(n_rows), safe_target] - row_max[:, 0]
        loss = xp.log(S) - (1.0 - e) * z_target
        if e:
            loss -= (e / n_classes) * z_sum
        loss *= valid
        self.E, self.S, self.target, self.valid, self.e = E, S, safe_target, valid, e
        # the count stays on the device (reading it would stall a GPU); as a float of x's dtype, which keeps the loss's
        # dtype, and at least 1: with every row ignored the mean loss is 0 (PyTorch gives nan)
        self.reduction, self.n_valid = reduction, xp.maximum(valid.sum(dtype=x.dtype), 1)
        if reduction == "none":
            return loss
        if reduction == "sum":
            return xp.asarray(loss.sum())
        return xp.asarray(loss.sum() / self.n_valid)

    def backward(self, g):
        if self.fused:
            return self.backward_fused(g)
        xp = backend.xp_of(g)
        E, S, e = self.E, self.S, self.e
        n_rows, n_classes = E.shape
        if self.reduction == "mean":
            g = g / self.n_valid
        s = (g * self.valid).astype(E.dtype, copy=False)               # s_r; g is () for mean/sum, (M,) for none
        s_over_S = (s / S)[:, None]                                     # (M, 1): s / S
        dx = grad_buffer(self, E)
        for r in row_blocks(n_rows, E.itemsize * n_classes, backend.device_of(E)):
            xp.multiply(E[r], s_over_S[r], out=dx[r])                   # E * (s / S)
            if e:
                dx[r] -= (e / n_classes) * s[r, None]                   # - s e / C
        dx[xp.arange(n_rows), self.target] -= (1.0 - e) * s             # - s (1 - e) one_hot(t)
        return dx, None

    def forward_fused(self, x, target, ignore_index, e, reduction):
        xp, n_classes, kind = backend.xp_of(x), x.shape[1], x.dtype.type
        self.x, self.target, self.ignore_index, self.e, self.reduction = x, target[:, None], ignore_index, e, reduction
        self.columns = xp.arange(n_classes)                               # the class id of each column: q without
        self.q_on, self.q_off = kind(1.0 - e + e / n_classes), kind(e / n_classes)           # a one-hot array
        self.row_max = max_of_rows(x)[:, None]
        self.S = exp_sum_of_rows(x, self.row_max)[:, None]                                    # S
        q_z = _target_dot(x, self.row_max, self.columns, self.target, self.q_on, self.q_off)  # sum_c q_c z_c
        loss_args = (self.S, q_z[:, None], self.target, ignore_index)
        if reduction == "none":
            return _row_loss(*loss_args)[:, 0]
        total = _loss_sum(*loss_args)
        if reduction == "sum":
            return total
        self.n_valid = _valid_count(target, ignore_index, kind(0))        # on the device, as in forward
        return _per_valid(total, self.n_valid)

    def backward_fused(self, g):
        if self.reduction == "none":
            g = g[:, None]
        elif self.reduction == "mean":
            g = _per_valid(g, self.n_valid)
        return _ce_grad(g, self.x, self.row_max, self.S, self.columns, self.target, self.ignore_index, self.q_on,
                        self.q_off), None


# ----- the GPU kernels (backend.fuse): x (M, C); row_max, S, target (M, 1); columns (C,) -----
def _q(xp, columns, target, q_on, q_off):
    """The smoothed target distribution q inside a kernel body: q_on at the target's column, q_off elsewhere."""
    return xp.where(columns == target, q_on, q_off)


@backend.fuse
def _target_dot(xp, x, row_max, columns, target, q_on, q_off):
    """(M,) sum_c q_c z_c, z = x - max."""
    return xp.sum(_q(xp, columns, target, q_on, q_off) * (x - row_max), axis=1)


def _loss(xp, S, q_z, target, ignore_index):
    """(log S - sum_c q_c z_c) on the rows whose target is not ignored, 0 on the others."""
    return (xp.log(S) - q_z) * (target != ignore_index)


@backend.fuse
def _row_loss(xp, S, q_z, target, ignore_index):
    """(M, 1) loss of each row."""
    return _loss(xp, S, q_z, target, ignore_index)


@backend.fuse
def _loss_sum(xp, S, q_z, target, ignore_index):
    """() the sum of the rows' losses."""
    return xp.sum(_loss(xp, S, q_z, target, ignore_index))


@backend.fuse
def _valid_count(xp, target, ignore_index, zero):
    """() the count of targets not ignored, in the logits' dtype (zero)."""
    return xp.sum((target != ignore_index) + zero)


@backend.fuse
def _per_valid(xp, value, n_valid):
    """value / max(n_valid, 1): with every row ignored the mean loss is 0 (PyTorch gives nan)."""
    return value / xp.maximum(n_valid, 1)


@backend.fuse
def _ce_grad(xp, s, x, row_max, S, columns, target, ignore_index, q_on, q_off):
    """dx = s (p - q) on the rows whose target is not ignored, p = exp(x - max) / S."""
    return (s * (target != ignore_index)) * (xp.exp(x - row_max) / S - _q(xp, columns, target, q_on, q_off))


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
