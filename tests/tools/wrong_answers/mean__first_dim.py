"""A wrong answer: n is taken as the size of the first reduced dim, where it is the product of every reduced dim's
size."""
import numpy as np

from minitorch.autograd import Function
from minitorch.ops import normalize_dims

MISTAKE = r"first reduced dim"


class Mean(Function):
    def forward(self, a, dim=None, keepdim=False):
        self.shape, self.dims, self.keepdim = a.shape, normalize_dims(dim, a.ndim), keepdim
        return a.mean(axis=self.dims, keepdims=keepdim)

    def backward(self, g):
        if not self.keepdim:
            g = np.expand_dims(g, self.dims)
        return np.broadcast_to(g / self.shape[self.dims[0]], self.shape)
