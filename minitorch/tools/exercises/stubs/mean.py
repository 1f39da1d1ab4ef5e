"""Exercise 8 (mean): the mean over some dims.

forward(a, dim=None, keepdim=False) -> a.mean over the dims (as in the sum exercise: None, an int or a tuple;
`normalize_dims` gives the axes); backward(g) -> dL/da, shaped like a.

Derive: out = (1/n) sum_i a_i over the n elements averaged into one output, so each gets g / n. What is n when
dim is a tuple?

Declare every array backward reads with self.save_for_backward(...) and read it back with self.saved_tensors (Python
values such as dims and flags stay plain attributes of self). The check runs your op as the engine runs it: in
backward, g and what you saved are read-only, and forward's inputs must not change (compute new arrays: g / b, not
g /= b); it also runs case 1 in float32, where the output and each gradient must be float32 too (new arrays in the
input's dtype: np.zeros(s, dtype=x.dtype)).

Check: python3 -m minitorch.tools.exercises check mean --dir THIS_FOLDER
Hint: python3 -m minitorch.tools.exercises hint mean
"""
import numpy as np  # noqa: F401  (np.broadcast_to is useful)

from minitorch.autograd import Function
from minitorch.ops import normalize_dims  # noqa: F401  (use it in forward)


class Mean(Function):
    def forward(self, a, dim=None, keepdim=False):
        raise NotImplementedError

    def backward(self, g):
        raise NotImplementedError
