"""A wrong answer: the sum's gradient divided by the count of summed elements, as a mean's is."""
import numpy as np

from minitorch.autograd import Function
from minitorch.ops import normalize_dims

MISTAKE = r"divided by the count of summed elements"


class Sum(Function):
    def forward(self, a, dim=None, keepdim=False):
        self.shape, self.dims, self.keepdim = a.shape, normalize_dims(dim, a.ndim), keepdim
        return a.sum(axis=self.dims, keepdims=keepdim)

    def backward(self, g):
        if not self.keepdim:
            g = np.expand_dims(g, self.dims)
        return np.broadcast_to(g, self.shape) / (np.prod(self.shape) / g.size)
