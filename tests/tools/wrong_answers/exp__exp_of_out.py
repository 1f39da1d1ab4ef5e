"""A wrong answer: saves the output and takes exp of it again: g * exp(out)."""
import numpy as np

from minitorch.autograd import Function

MISTAKE = r"taken at the output"


class Exp(Function):
    def forward(self, a):
        y = np.exp(a)
        self.save_for_backward(y)
        return y

    def backward(self, g):
        y, = self.saved_tensors
        return g * np.exp(y)
