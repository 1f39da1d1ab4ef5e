"""Exercise 11 (log): the natural logarithm, elementwise.

forward(a) -> log(a) for a positive float64 array of any shape; backward(g) -> dL/da.

Derive: d log(a) / da = 1 / a.

Declare every array backward reads with self.save_for_backward(...) and read it back with self.saved_tensors (Python
values such as dims and flags stay plain attributes of self). The check runs your op as the engine runs it: in
backward, g and what you saved are read-only, and forward's inputs must not change (compute new arrays: g / b, not
g /= b); it also runs case 1 in float32, where the output and each gradient must be float32 too (new arrays in the
input's dtype: np.zeros(s, dtype=x.dtype)).

Check: python3 -m minitorch.tools.exercises check log --dir THIS_FOLDER
Hint: python3 -m minitorch.tools.exercises hint log
"""
import numpy as np  # noqa: F401  (np.log)

from minitorch.autograd import Function


class Log(Function):
    def forward(self, a):
        raise NotImplementedError

    def backward(self, g):
        raise NotImplementedError
