"""Exercise 13 (log_softmax): y = log(softmax(x)) along one dim, computed without a log of a softmax.

forward(x, dim) -> y_i = x_i - log(sum_j exp(x_j)), stable for logits near 1000 (shift by the max along dim);
backward(g) -> dx.

Derive d y_i / d x_j (start from d log S / d x_j, with S the sum of exponentials), then dx_j = sum_i g_i
d y_i / d x_j. The softmax can be rebuilt from the output: which single array must be saved?

Declare every array backward reads with self.save_for_backward(...) and read it back with self.saved_tensors (Python
values such as dims and flags stay plain attributes of self). The check runs your op as the engine runs it: in
backward, g and what you saved are read-only, and forward's inputs must not change (compute new arrays: g / b, not
g /= b); it also runs case 1 in float32, where the output and each gradient must be float32 too (new arrays in the
input's dtype: np.zeros(s, dtype=x.dtype)). The check draws logits near 1000 too.

Check: python3 -m minitorch.tools.exercises check log_softmax --dir THIS_FOLDER
Hint: python3 -m minitorch.tools.exercises hint log_softmax
"""
import numpy as np  # noqa: F401

from minitorch.autograd import Function


class LogSoftmax(Function):
    def forward(self, x, dim):
        raise NotImplementedError

    def backward(self, g):
        raise NotImplementedError
