"""A wrong answer: saves the output log(a) and divides by it, as if the derivative were 1 / out."""
import numpy as np

from minitorch.autograd import Function

MISTAKE = r"taken at the output"


class Log(Function):
    def forward(self, a):
        out = np.log(a)
        self.save_for_backward(out)
        return out

    def backward(self, g):
        out, = self.saved_tensors
        return g / out
