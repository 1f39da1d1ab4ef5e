"""A wrong answer: with keepdim=False the lost axes are put back with g[..., None], at the end of g, where they must
go back at the summed dims' places."""
import numpy as np

from minitorch.autograd import Function
from minitorch.ops import normalize_dims

MISTAKE = r"put back|at their places"


class Sum(Function):
    def forward(self, a, dim=None, keepdim=False):
        self.shape, self.dims, self.keepdim = a.shape, normalize_dims(dim, a.ndim), keepdim
        return a.sum(axis=self.dims, keepdims=keepdim)

    def backward(self, g):
        if not self.keepdim:
            for _ in self.dims:
                g = g[..., None]
        return np.broadcast_to(g, self.shape).copy()
