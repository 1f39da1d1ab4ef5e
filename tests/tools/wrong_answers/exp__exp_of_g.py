"""A wrong answer: the derivative exp evaluated at the incoming gradient: g * exp(g)."""
import numpy as np

from minitorch.autograd import Function

MISTAKE = r"evaluat|taken at|exp\(a\)"


class Exp(Function):
    def forward(self, a):
        out = np.exp(a)
        self.save_for_backward(out)
        return out

    def backward(self, g):
        return g * np.exp(g)
