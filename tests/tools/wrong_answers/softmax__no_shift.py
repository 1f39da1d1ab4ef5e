"""A wrong answer: exp of the logits as they are, which overflows near 1000."""
import numpy as np

from minitorch.autograd import Function

MISTAKE = r"subtract the max"


class Softmax(Function):
    def forward(self, x, dim):
        e = np.exp(x)
        y = e / e.sum(axis=dim, keepdims=True)
        self.save_for_backward(y)
        self.dim = dim
        return y

    def backward(self, g):
        y, = self.saved_tensors
        return y * (g - (g * y).sum(axis=self.dim, keepdims=True))
