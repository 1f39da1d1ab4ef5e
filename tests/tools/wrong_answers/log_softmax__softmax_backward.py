"""A wrong answer: the softmax exercise's backward applied to p = exp(y), as if the output were the softmax."""
import numpy as np

from minitorch.autograd import Function

MISTAKE = r"row sum|sum\(g\)|sum to 0"


class LogSoftmax(Function):
    def forward(self, x, dim):
        z = x - x.max(axis=dim, keepdims=True)
        y = z - np.log(np.exp(z).sum(axis=dim, keepdims=True))
        self.save_for_backward(y)
        self.dim = dim
        return y

    def backward(self, g):
        y, = self.saved_tensors
        p = np.exp(y)
        return p * (g - (g * p).sum(axis=self.dim, keepdims=True))
