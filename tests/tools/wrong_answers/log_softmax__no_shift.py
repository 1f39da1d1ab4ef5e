"""A wrong answer: log S taken of exp of the logits as they are, which overflows near 1000 (the stub asks for the
max shift)."""
import numpy as np

from minitorch.autograd import Function

MISTAKE = r"subtract the max"


class LogSoftmax(Function):
    def forward(self, x, dim):
        y = x - np.log(np.exp(x).sum(axis=dim, keepdims=True))
        self.save_for_backward(y)
        self.dim = dim
        return y

    def backward(self, g):
        y, = self.saved_tensors
        return g - np.exp(y) * g.sum(axis=self.dim, keepdims=True)
