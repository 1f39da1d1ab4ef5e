"""Reductions over one or more dims: sum, mean, max, min, the 2-norm."""
import math

from .. import backend
from ..core import Function
from . import array_ops as A
from .array_ops import normalize_dims


def expand_back(g, in_shape, dims, keepdim):
    """Broadcast a reduced gradient back over the reduced dims (for an array a read-only view, no copy)."""
    if not keepdim:
        g = g.reshape([1 if i in dims else n for i, n in enumerate(in_shape)])
    return A.broadcast_to(g, in_shape)


def check_not_empty(op, shape, dim, dims, whole=RuntimeError):
    """PyTorch's errors for a maximum (or its index) of no element: IndexError naming an empty reduced dim, `whole`
    (max's RuntimeError, argmax's IndexError) for all dims (dim None) of an empty tensor; NumPy's would say
    "zero-size array"."""
    if 0 not in shape:
        return
    if dim is None:
        raise whole(f"{op}(): the tensor of shape {tuple(shape)} is empty; give the dim to reduce")
    for d in dims:
        if shape[d] == 0:
            raise IndexError(f"{op}(): dim {d} of the tensor of shape {tuple(shape)} is empty (size 0); a "
                             f"{'minimum' if op.endswith('min') else 'maximum'} needs an element")


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
        if self.count == 0:   # the mean of no element: nan, as PyTorch's (NumPy's would warn)
            return a.sum(axis=self.dims, keepdims=keepdim) * math.nan   # (a sum of nothing is 0)
        return a.mean(axis=self.dims, keepdims=keepdim)

    def backward(self, g):  # each element contributes 1/count (none when count is 0: the gradient is empty)
        return expand_back(g / max(self.count, 1), self.in_shape, self.dims, self.keepdim)


class Norm(Function):
    """The 2-norm over dims, n = sqrt(sum(a * a)):  d n = a . da / n;  at n = 0 (all of a 0 there) the gradient is 0,
    PyTorch's subgradient (a / n would be 0/0)."""
    needs_float = True

    def forward(self, a, dim=None, keepdim=False):
        self.in_shape, self.keepdim = a.shape, keepdim
        self.dims = normalize_dims(dim, a.ndim)
        out = backend.xp_of(a).sqrt((a * a).sum(axis=self.dims, keepdims=keepdim))
        self.save_for_backward(a, out)
        return out

    def backward(self, g):
        a, n = self.saved_tensors
        safe = A.where(backend.array_of(n) == 0, 1.0, n)   # where n = 0, a = 0: the product below is 0
        return expand_back(g / safe, self.in_shape, self.dims, self.keepdim) * a


class Max(Function):
    """The maximum values. Ties share the gradient equally (so the gradient is the average of the subgradients), as
    PyTorch's amax and max()."""
    extreme = "max"   # which one, for Min (a subclass)

    def forward(self, a, dim=None, keepdim=False):
        self.in_shape, self.keepdim = a.shape, keepdim
        self.dims = normalize_dims(dim, a.ndim)
        check_not_empty(self.extreme, a.shape, dim, self.dims)
        out = a.max(axis=self.dims, keepdims=True) if self.extreme == "max" else a.min(axis=self.dims, keepdims=True)
        is_max = a == out                                            # bool, and the tie count an integer:
        self.save_for_backward(is_max, is_max.sum(axis=self.dims, keepdims=True))  # constants under create_graph
        return out if keepdim else out.reshape([n for i, n in enumerate(a.shape) if i not in self.dims])

    def backward(self, g):  # d max = da at the argmax (split between ties)
        is_max, ties = self.saved_tensors
        share = (is_max / ties).astype(g.dtype)
        return expand_back(g, self.in_shape, self.dims, self.keepdim) * share


class Min(Max):
    """The minimum values, Max's forward and backward with a.min: d min = da at the argmin, ties sharing it equally
    (PyTorch's amin and min())."""
    extreme = "min"
