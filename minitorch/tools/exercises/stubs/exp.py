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
