"""A wrong answer: only the Jacobian's diagonal, dx = g y (1 - y): the [i != j] terms (the row sum) are left out."""
import numpy as np

from minitorch.autograd import Function

MISTAKE = r"row.sum|sum\(g \* y\)|sum to 0"


class Softmax(Function):
    def forward(self, x, dim):
        z = x - x.max(axis=dim, keepdims=True)
        y = np.exp(z) / np.exp(z).sum(axis=dim, keepdims=True)
        self.save_for_backward(y)
        self.dim = dim
        return y

    def backward(self, g):
        y, = self.saved_tensors
        return g * y * (1 - y)
