"""Exercise 11 (log): the natural logarithm, elementwise.

forward(a) -> log(a) for a positive float64 array of any shape; backward(g) -> dL/da.

Derive: d log(a) / da = 1 / a.

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
