"""A wrong answer: g / a^2 (the derivative of 1/a taken too, sign aside)."""
import numpy as np

from minitorch.autograd import Function

MISTAKE = r"divided by a twice"


class Log(Function):
    def forward(self, a):
        self.save_for_backward(a)
        return np.log(a)

    def backward(self, g):
        a, = self.saved_tensors
        return g / a ** 2
