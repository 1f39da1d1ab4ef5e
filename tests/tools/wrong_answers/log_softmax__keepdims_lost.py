"""A wrong answer (the issue's): the row sum of g taken without keepdims."""
import numpy as np

from minitorch.autograd import Function

MISTAKE = r"keepdims"


class LogSoftmax(Function):
    def forward(self, x, dim):
        z = x - x.max(axis=dim, keepdims=True)
        y = z - np.log(np.exp(z).sum(axis=dim, keepdims=True))
        self.save_for_backward(y)
        self.dim = dim
        return y

    def backward(self, g):
        y, = self.saved_tensors
        return g - np.exp(y) * g.sum(axis=self.dim)
