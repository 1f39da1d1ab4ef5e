"""Exercise 14 (cross_entropy): cross-entropy with label smoothing, ignored targets and three reductions.

forward(x, target, ignore_index, label_smoothing, reduction): x (N, C) float64 logits, target (N,) int class ids
(rows whose target equals ignore_index count for nothing), e = label_smoothing in [0, 1], reduction "mean", "sum"
or "none". Row r's loss is loss_r = -sum_c soft_rc log p_rc with p_r = softmax(x_r) and the smoothed target
soft_r = (1 - e) one_hot(t_r) + e / C; 0 on an ignored row. Return the losses (N,) for "none", their sum (a 0-d array,
np.asarray(total)) for "sum", and for "mean" the sum divided by the count of non-ignored rows (at least 1).
backward(g): g is 0-d for "mean"/"sum", (N,) for "none" -> (dx, None) (no gradient for the target).

Derive d loss_r / d x_rj from log p = x - max - log S (the log-softmax exercise), using sum_c soft_c = 1. Then
the reduction scales each row: work out the gradient reaching row r for each reduction.

Declare every array backward reads with self.save_for_backward(...) and read it back with self.saved_tensors (Python
values such as dims and flags stay plain attributes of self). The check runs your op as the engine runs it: in
backward, g and what you saved are read-only, and forward's inputs must not change (compute new arrays: g / b, not
g /= b); it also runs case 1 in float32, where the output and each gradient must be float32 too (new arrays in the
input's dtype: np.zeros(s, dtype=x.dtype)). The check draws logits near 1000 too: the forward must stay finite there
(shift by the row max).

Check: python3 -m minitorch.tools.exercises check cross_entropy --dir THIS_FOLDER
Hint: python3 -m minitorch.tools.exercises hint cross_entropy
"""
import numpy as np  # noqa: F401

from minitorch.autograd import Function


class CrossEntropy(Function):
    def forward(self, x, target, ignore_index, label_smoothing, reduction):
        raise NotImplementedError

    def backward(self, g):
        raise NotImplementedError
