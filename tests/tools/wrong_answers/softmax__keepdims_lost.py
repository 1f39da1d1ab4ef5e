"""A wrong answer: the row sum taken without keepdims, so it does not broadcast back along dim."""
import numpy as np

from minitorch.autograd import Function

MISTAKE = r"keepdims"


class Softmax(Function):
    def forward(self, x, dim):
        z = x - x.max(axis=dim, keepdims=True)
        y = np.exp(z) / np.exp(z).sum(axis=dim, keepdims=True)
        self.save_for_backward(y)
        self.dim = dim
        return y

    def backward(self, g):
        y, = self.saved_tensors
        s = np.sum(g * y, axis=self.dim)
        return y * (g - s)
