"""A wrong answer: forward computes exp into its input's own memory (np.exp(a, out=a)), so the leaf's data changes;
its numbers are right."""
import numpy as np

from minitorch.autograd import Function

MISTAKE = r"changes its input a"


class Exp(Function):
    def forward(self, a):
        out = np.exp(a, out=a)
        self.save_for_backward(out)
        return out

    def backward(self, g):
        out, = self.saved_tensors
        return g * out
