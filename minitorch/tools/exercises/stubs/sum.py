"""Exercise 7 (sum): sum over some dims, the reduction behind every loss.

forward(a, dim=None, keepdim=False): dim is None (every dim), an int or a tuple of ints, negatives allowed;
`normalize_dims(dim, a.ndim)` (imported below) turns it into a sorted tuple of axes. Return a.sum over those axes,
keeping them as size 1 when keepdim is True. backward(g) returns dL/da, shaped like a.

Derive: out = sum_i a_i, so d out / d a_i = 1 for every summed element: each gets the output's gradient. The work
is in the shapes: with keepdim=False g has lost the summed dims, and they must come back (as size 1) before g can
broadcast to a's shape. This is unbroadcast in reverse.

Declare every array backward reads with self.save_for_backward(...) and read it back with self.saved_tensors (Python
values such as dims and flags stay plain attributes of self). The check runs your op as the engine runs it: in
backward, g and what you saved are read-only, and forward's inputs must not change (compute new arrays: g / b, not
g /= b); it also runs case 1 in float32, where the output and each gradient must be float32 too (new arrays in the
input's dtype: np.zeros(s, dtype=x.dtype)).

Check: python3 -m minitorch.tools.exercises check sum --dir THIS_FOLDER
Hint: python3 -m minitorch.tools.exercises hint sum
"""
import numpy as np  # noqa: F401  (np.broadcast_to is useful)

from minitorch.autograd import Function
from minitorch.ops import normalize_dims  # noqa: F401  (use it in forward)


class Sum(Function):
    def forward(self, a, dim=None, keepdim=False):
        raise NotImplementedError

    def backward(self, g):
        raise NotImplementedError
