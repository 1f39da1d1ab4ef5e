"""Exercise 10 (exp): the exponential, elementwise.

forward(a) -> exp(a) for a float64 array of any shape (0-d included); backward(g) -> dL/da.

Derive: d exp(a) / da = exp(a). Decide what to save (self.save_for_backward): the input, or the output, which is
already the derivative?

The same op in PyTorch's form (minitorch runs both; the grader grades this class's form):
    class Exp(Function):
        @staticmethod
        def forward(ctx, a): ...     # a Tensor; ctx.save_for_backward(...)
        @staticmethod
        def backward(ctx, g): ...    # Tensors; ctx.saved_tensors

Declare every array backward reads with self.save_for_backward(...) and read it back with self.saved_tensors (Python
values such as dims and flags stay plain attributes of self). The check runs your op as the engine runs it: in
backward, g and what you saved are read-only, and forward's inputs must not change (compute new arrays: g / b, not
g /= b); it also runs case 1 in float32, where the output and each gradient must be float32 too (new arrays in the
input's dtype: np.zeros(s, dtype=x.dtype)). The check draws a 0-d array too.

Check: python3 -m minitorch.tools.exercises check exp --dir THIS_FOLDER
Hint: python3 -m minitorch.tools.exercises hint exp
"""
import numpy as np  # noqa: F401  (np.exp)

from minitorch.autograd import Function


class Exp(Function):
    def forward(self, a):
        raise NotImplementedError

    def backward(self, g):
        raise NotImplementedError
