"""Exercise 8 (mean): the mean over some dims.

forward(a, dim=None, keepdim=False) -> a.mean over the dims (as in the sum exercise: None, an int or a tuple;
`normalize_dims` gives the axes); backward(g) -> dL/da, shaped like a.

Derive: out = (1/n) sum_i a_i over the n elements averaged into one output, so each gets g / n. What is n when
dim is a tuple?

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
