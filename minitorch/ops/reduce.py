"""Reductions over one or more dims: sum, mean, max."""
from ..autograd import Function
from . import generic


def normalize_dims(dim, ndim):
    """dim (None, int or tuple, negatives allowed) -> a sorted tuple of non-negative axes."""
    if dim is None:
        return tuple(range(ndim))
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    out = []
    for d in dims:
        if not -max(ndim, 1) <= d < max(ndim, 1):
            raise IndexError(f"dim {d} is out of range for a tensor with {ndim} dims")
        out.append(d % max(ndim, 1))
    if len(set(out)) != len(out):
        raise ValueError(f"dim {dim} names an axis twice")
    if ndim == 0:  # a 0-d tensor accepts dim 0 / -1 (as PyTorch does) but has no axis to reduce
        return ()
    return tuple(sorted(out))


def expand_back(g, in_shape, dims, keepdim):
    """Broadcast a reduced gradient back over the reduced dims (for an array a read-only view, no copy)."""
    if not keepdim:
        g = g.reshape([1 if i in dims else n for i, n in enumerate(in_shape)])
    return generic.broadcast_to(g, in_shape)


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
    constants = ("share",)  # which elements are maxima changes only at ties

    def forward(self, a, dim=None, keepdim=False):
        self.in_shape, self.keepdim = a.shape, keepdim
        self.dims = normalize_dims(dim, a.ndim)
        out = a.max(axis=self.dims, keepdims=True)
        is_max = a == out
        self.share = is_max / is_max.sum(axis=self.dims, keepdims=True).astype(a.dtype)
        return out if keepdim else out.reshape([n for i, n in enumerate(a.shape) if i not in self.dims])

    def backward(self, g):  # d max = da at the argmax (split between ties)
        return expand_back(g, self.in_shape, self.dims, self.keepdim) * self.share
