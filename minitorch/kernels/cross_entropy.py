"""CrossEntropy on each device.

On the CPU the rows are walked in cache-sized blocks (rows.py) and only E (M, C) in the logits' dtype and S (M,) are
saved, not x: the division by S happens on the (M, 1) side, and the backward writes dx into E when no second backward
follows (rows.grad_buffer). On the GPU the forward is three row reductions (max, S, sum_c q_c z_c with q built from a
column index) and the loss's sum, and the backward one kernel, dx = s * (exp(z) / S - q); x, the row max and S are
saved.
"""
from .. import backend
from ..core import kernel
from ..fused.cross_entropy import CrossEntropy, n_valid_of
from .rows import grad_buffer, row_blocks, row_sum
from .softmax import exp_sum_of_rows, max_of_rows


@kernel(CrossEntropy, "cpu")
class CrossEntropyCpu(CrossEntropy):
    """The reference's loss and gradient in row blocks that stay in cache; saves E and S (and the target, the valid
    mask and the count of valid rows)."""

    def forward(self, x, target, *, ignore_index, label_smoothing, reduction):
        xp = backend.xp_of(x)
        n_rows, n_classes = x.shape
        e = label_smoothing
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
        n_valid = n_valid_of(valid, x.dtype)  # on the device, in x's dtype (which keeps the loss's dtype)
        self.save_for_backward(E, S, safe_target, valid, n_valid)
        self.e, self.reduction = e, reduction
        if reduction == "none":
            return loss
        if reduction == "sum":
            return xp.asarray(loss.sum())
        return xp.asarray(loss.sum() / n_valid)

    def backward(self, g):
        E, S, target, valid, n_valid = self.saved_tensors
        xp, e = backend.xp_of(g), self.e
        n_rows, n_classes = E.shape
        if self.reduction == "mean":
            g = g / n_valid
        s = (g * valid).astype(E.dtype, copy=False)                    # s_r; g is () for mean/sum, (M,) for none
        s_over_S = (s / S)[:, None]                                     # (M, 1): s / S
        dx = grad_buffer(self, E)
        for r in row_blocks(n_rows, E.itemsize * n_classes, backend.device_of(E)):
            xp.multiply(E[r], s_over_S[r], out=dx[r])                   # E * (s / S)
            if e:
                dx[r] -= (e / n_classes) * s[r, None]                   # - s e / C
        dx[xp.arange(n_rows), target] -= (1.0 - e) * s                  # - s (1 - e) one_hot(t)
        return dx, None


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


@kernel(CrossEntropy, "cuda")
class CrossEntropyCuda(CrossEntropy):
    """Forward: max, S, sum_c q_c z_c and the loss's sum (and the count of valid rows for the mean), one kernel each;
    backward: one kernel (two for the mean). Saves x, the row max, S, the column ids, the target (and the count)."""

    def forward(self, x, target, *, ignore_index, label_smoothing, reduction):
        xp, n_classes, kind = backend.xp_of(x), x.shape[1], x.dtype.type
        e = label_smoothing
        self.ignore_index, self.e, self.reduction = ignore_index, e, reduction
        columns = xp.arange(n_classes)                                    # the class id of each column: q without
        self.q_on, self.q_off = kind(1.0 - e + e / n_classes), kind(e / n_classes)           # a one-hot array
        target = target[:, None]
        row_max = max_of_rows(x)[:, None]
        S = exp_sum_of_rows(x, row_max)[:, None]                                              # S
        q_z = _target_dot(x, row_max, columns, target, self.q_on, self.q_off)                 # sum_c q_c z_c
        loss_args = (S, q_z[:, None], target, ignore_index)
        n_valid = None
        if reduction == "none":
            out = _row_loss(*loss_args)[:, 0]
        elif reduction == "sum":
            out = _loss_sum(*loss_args)
        else:
            total = _loss_sum(*loss_args)
            n_valid = _valid_count(target, ignore_index, kind(0))        # on the device, as on the CPU
            out = _per_valid(total, n_valid)
        self.save_for_backward(x, row_max, S, columns, target, n_valid)
        return out

    def backward(self, g):
        x, row_max, S, columns, target, n_valid = self.saved_tensors
        if self.reduction == "none":
            g = g[:, None]
        elif self.reduction == "mean":
            g = _per_valid(g, n_valid)
        return _ce_grad(g, x, row_max, S, columns, target, self.ignore_index, self.q_on, self.q_off), None
