"""A wrong answer: divided by the number of outputs, where the mean divides by the count of elements averaged into
each output."""
import numpy as np

from minitorch.autograd import Function
from minitorch.ops import normalize_dims

MISTAKE = r"1/n|count of elements averaged"


class Mean(Function):
    def forward(self, a, dim=None, keepdim=False):
        self.shape, self.dims, self.keepdim = a.shape, normalize_dims(dim, a.ndim), keepdim
        out = a.mean(axis=self.dims, keepdims=keepdim)
        self.outputs = np.size(out)
        return out

    def backward(self, g):
        if not self.keepdim:
            g = np.expand_dims(g, self.dims)
        return np.broadcast_to(g, self.shape) / self.outputs
