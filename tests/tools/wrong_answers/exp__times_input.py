"""A wrong answer: saves the input and returns g * a, as if the derivative of exp(a) were a."""
import numpy as np

from minitorch.autograd import Function

MISTAKE = r"g \* a"


class Exp(Function):
    def forward(self, a):
        self.save_for_backward(a)
        return np.exp(a)

    def backward(self, g):
        a, = self.saved_tensors
        return g * a
