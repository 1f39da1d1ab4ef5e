"""A wrong answer: divided by the number of reduced dims, where it is the count of elements averaged."""
import numpy as np

from minitorch.autograd import Function
from minitorch.ops import normalize_dims

MISTAKE = r"1/n|count of elements averaged"


class Mean(Function):
    def forward(self, a, dim=None, keepdim=False):
        self.shape, self.dims, self.keepdim = a.shape, normalize_dims(dim, a.ndim), keepdim
        return a.mean(axis=self.dims, keepdims=keepdim)

    def backward(self, g):
        if not self.keepdim:
            g = np.expand_dims(g, self.dims)
        return np.broadcast_to(g, self.shape) / len(self.dims)
