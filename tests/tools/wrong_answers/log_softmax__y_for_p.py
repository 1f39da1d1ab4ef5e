"""A wrong answer: the softmax taken as y (the output) itself, not exp(y)."""
import numpy as np

from minitorch.autograd import Function

MISTAKE = r"taken as y itself"


class LogSoftmax(Function):
    def forward(self, x, dim):
        z = x - x.max(axis=dim, keepdims=True)
        y = z - np.log(np.exp(z).sum(axis=dim, keepdims=True))
        self.save_for_backward(y)
        self.dim = dim
        return y

    def backward(self, g):
        y, = self.saved_tensors
        return g - y * g.sum(axis=self.dim, keepdims=True)
