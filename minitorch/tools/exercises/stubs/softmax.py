"""Exercise 12 (softmax): y = softmax(x) along one dim, as one Function (the first fused op).

forward(x, dim): x float64 of any shape, dim a non-negative int -> y_i = exp(x_i) / sum_j exp(x_j) along dim. The
check draws logits near 1000, where exp overflows: use softmax(x) = softmax(x - c) with c = max(x) along dim.
backward(g) -> dx.

Derive the Jacobian d y_i / d x_j with the quotient rule (two cases: i = j and i != j), then the vector-Jacobian
product dx_j = sum_i g_i d y_i / d x_j, and write it with one sum along dim. Save only what that needs.

Declare every array backward reads with self.save_for_backward(...) and read it back with self.saved_tensors (Python
values such as dims and flags stay plain attributes of self). The check runs your op as the engine runs it: in
backward, g and what you saved are read-only, and forward's inputs must not change (compute new arrays: g / b, not
g /= b); it also runs case 1 in float32, where the output and each gradient must be float32 too (new arrays in the
input's dtype: np.zeros(s, dtype=x.dtype)).

Check: python3 -m minitorch.tools.exercises check softmax --dir THIS_FOLDER
Hint: python3 -m minitorch.tools.exercises hint softmax
"""
import numpy as np  # noqa: F401

from minitorch.autograd import Function


class Softmax(Function):
    def forward(self, x, dim):
        raise NotImplementedError

    def backward(self, g):
        raise NotImplementedError
