"""CrossEntropy on the GPU (the CPU runs the reference op, fused/cross_entropy.py).

The forward is two row reductions (max, then S and sum_c q_c z_c together with q built from a column index made once
per class count) and the loss's sum (with the count of valid rows: the mean's division reads both), and the backward
one kernel, dx = s * (exp(z) / S - q); x, the row max and S are saved. Two sums
over the same rows are one complex sum, sum(a + 1j b) = sum(a) + 1j sum(b), each part the float sum it would be alone
(see kernels/layer_norm.py). float16 logits are read as float32 inside the kernels (in_body): the sums and the loss
are float32, dx is rounded to float16 once.
"""
import numpy as np

from .. import backend
from ..core import kernel
from ..fused.cross_entropy import CrossEntropy
from ..fused.precision import in_body, out_body, scalar_type
from .softmax import max_of_rows


# ----- the GPU kernels (backend.fuse): x (M, C); row_max, S, target (M, 1); columns (C,) -----
def _q(xp, columns, target, q_on, q_off):
    """The smoothed target distribution q inside a kernel body: q_on at the target's column, q_off elsewhere."""
    return xp.where(columns == target, q_on, q_off)


@backend.fuse
def _exp_and_target_sums(xp, x, row_max, columns, target, q_on, q_off, j):
    """(M,) complex: S + j sum_c q_c z_c, S = sum_c exp(z_c), z = x - max."""
    z = in_body(xp, x) - row_max
    return xp.sum(xp.exp(z) + j * (_q(xp, columns, target, q_on, q_off) * z), axis=1)


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
def _loss_and_valid_sums(xp, S, q_z, target, ignore_index, j):
    """() complex: the sum of the rows' losses + j the count of targets not ignored."""
    return xp.sum(_loss(xp, S, q_z, target, ignore_index) + j * (target != ignore_index))


@backend.fuse
def _per_valid(xp, value, n_valid):
    """value / max(n_valid, 1): with every row ignored the mean loss is 0 (PyTorch gives nan)."""
    return value / xp.maximum(n_valid, 1)


_column_cache = {}


def _columns(xp, n_classes):
    """(C,) the class id of each column, made once per count (an arange would be a launch per call)."""
    if xp is np:
        return xp.arange(n_classes)
    key = (xp.cuda.Device().id, n_classes)
    if key not in _column_cache:
        _column_cache[key] = xp.arange(n_classes)
    return _column_cache[key]


@backend.fuse
def _ce_grad(xp, g, n_valid, x, row_max, S, columns, target, ignore_index, q_on, q_off):
    """dx = s (p - q) on the rows whose target is not ignored, p = exp(x - max) / S, s = g / max(n_valid, 1) (the
    mean's division in the same kernel; n_valid 1 for the other reductions)."""
    s = _per_valid.body(xp, g, n_valid)
    dx = (s * (target != ignore_index)) * (xp.exp(in_body(xp, x) - row_max) / S - _q(xp, columns, target, q_on, q_off))
    return out_body(dx, x)


@kernel(CrossEntropy, "cuda")
class CrossEntropyCuda(CrossEntropy):
    """Forward: max, then S with sum_c q_c z_c, then the loss's sum (with the count of valid rows for the mean), then
    the mean's division: one kernel each; backward: one kernel. Saves x and the target, as the reference, and keeps
    the row max, S, the column ids (and the count)."""

    def forward(self, x, target, *, ignore_index, label_smoothing, reduction):
        xp, n_classes, kind = backend.xp_of(x), x.shape[1], scalar_type(x.dtype)
        e = label_smoothing
        self.ignore_index, self.e, self.reduction = ignore_index, e, reduction
        columns = _columns(xp, n_classes)                                 # the class id of each column: q without
        self.q_on, self.q_off = kind(1.0 - e + e / n_classes), kind(e / n_classes)           # a one-hot array
        j = np.result_type(x.dtype, np.complex64).type(1j)               # complex sums at x's precision
        self.save_for_backward(x, target)
        target = target[:, None]
        row_max = max_of_rows(x)[:, None]
        sums = _exp_and_target_sums(x, row_max, columns, target, self.q_on, self.q_off, j)[:, None]
        S = sums.real                                                                         # S
        loss_args = (S, sums.imag, target, ignore_index)                                      # sum_c q_c z_c
        n_valid = None
        if reduction == "none":
            out = _row_loss(*loss_args)[:, 0]
        elif reduction == "sum":
            out = _loss_sum(*loss_args)
        else:
            sums = _loss_and_valid_sums(*loss_args, j)
            n_valid = sums.imag                                          # on the device, as on the CPU
            out = _per_valid(sums.real, n_valid)
        self.kept = row_max, S, columns, n_valid
        return out

    def backward(self, g):
        x, target = self.saved_tensors
        (row_max, S, columns, n_valid), target = self.kept, target[:, None]
        if self.reduction == "none":
            g = g[:, None]
        n_valid = scalar_type(x.dtype)(1) if n_valid is None else n_valid
        return _ce_grad(g, n_valid, x, row_max, S, columns, target, self.ignore_index, self.q_on, self.q_off), None
