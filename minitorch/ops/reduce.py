"""Reductions over one or more dims: sum, mean, max."""
from ..core import Function
from . import array_ops as A
from .array_ops import normalize_dims


def expand_back(g, in_shape, dims, keepdim):
    """Broadcast a reduced gradient back over the reduced dims (for an array a read-only view, no copy)."""
    if not keepdim:
        g = g.reshape([1 if i in dims else n for i, n in enumerate(in_shape)])
    return A.broadcast_to(g, in_shape)


class Sum(Function):
    def forward(self, a, dim=None, keepdim=False):
        self.in_shape, self.keepdim = a.shape, keepdim
        self.dims = normalize_dims(dim, a.ndim)
        return a.sum(axis=self.dims, keepdims=keepdim)

    def backward(self, g):  # every summed element gets the output's gradient
        return expand_back(g, self.in_shape, self.dims, self.keepdim)


class Mean(Function):
    def forward(self, a, dim=None, keepdim=False):
        self.in_shape, self.keepdim = a.shape, keepdim
        self.dims = normalize_dims(dim, a.ndim)
        self.count = 1
        for d in self.dims:
            self.count *= a.shape[d]
        return a.mean(axis=self.dims, keepdims=keepdim)

    def backward(self, g):  # each element contributes 1/count
        return expand_back(g / self.count, self.in_shape, self.dims, self.keepdim)


class Max(Function):
    """The maximum values. Ties share the gradient equally (so the gradient is the average of the subgradients)."""

    def forward(self, a, dim=None, keepdim=False):
        self.in_shape, self.keepdim = a.shape, keepdim
        self.dims = normalize_dims(dim, a.ndim)
        out = a.max(axis=self.dims, keepdims=True)
        is_max = a == out                                            # bool, and the tie count an integer:
        self.save_for_backward(is_max, is_max.sum(axis=self.dims, keepdims=True))  # constants under create_graph
        return out if keepdim else out.reshape([n for i, n in enumerate(a.shape) if i not in self.dims])

    def backward(self, g):  # d max = da at the argmax (split between ties)
        is_max, ties = self.saved_tensors
        share = (is_max / ties).astype(g.dtype)
        return expand_back(g, self.in_shape, self.dims, self.keepdim) * share
