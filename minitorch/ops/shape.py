"""Shape and indexing ops: reshape, transpose, permute, getitem, cat, stack. Forwards return views where NumPy can."""
import numpy as np

from .. import backend
from ..autograd import Function


class Reshape(Function):
    def forward(self, a, shape):
        self.in_shape = a.shape
        try:
            return a.reshape(shape)
        except ValueError:
            raise ValueError(f"reshape: cannot reshape a tensor of shape {tuple(a.shape)} "
                             f"({a.size} elements) into {tuple(shape)}") from None

    def backward(self, g):  # reshaping the gradient back
        return g.reshape(self.in_shape), None


class Permute(Function):
    def forward(self, a, dims):
        if sorted(d + a.ndim if d < 0 else d for d in dims) != list(range(a.ndim)):
            raise ValueError(f"permute: {tuple(dims)} is not a permutation of the {a.ndim} dims of {tuple(a.shape)}")
        self.dims = tuple(d % a.ndim for d in dims)
        return a.transpose(self.dims)

    def backward(self, g):  # the inverse permutation
        return g.transpose(np.argsort(self.dims)), None


def _is_advanced(index):
    """True when an index holds integer arrays (repeated positions then need a scatter-add)."""
    parts = index if isinstance(index, tuple) else (index,)
    for p in parts:
        if isinstance(p, list) or (backend.is_array(p) and p.dtype.kind in "iu"):
            return True
    return False


class GetItem(Function):
    """a[index] for basic (ints, slices, None, Ellipsis) and integer-array or bool-mask indexing."""

    def forward(self, a, index):
        self.in_shape, self.index = a.shape, index
        self.advanced = _is_advanced(index)
        try:
            return a[index]
        except IndexError as e:
            raise IndexError(f"getitem: index {index!r} does not fit a tensor of shape {tuple(a.shape)}: {e}") from None

    def backward(self, g):  # gradient goes back to the picked places; repeats add up
        out = backend.xp_of(g).zeros(self.in_shape, dtype=g.dtype)
        if self.advanced:
            backend.scatter_add(out, self.index, g)
        else:
            out[self.index] = g
        return out, None


class Cat(Function):
    def forward(self, *arrays, dim=0):
        _check_same_shape_except(arrays, dim, "cat")
        self.dim = dim
        self.bounds = np.cumsum([a.shape[dim] for a in arrays])[:-1]
        return backend.xp_of(arrays[0]).concatenate(arrays, axis=dim)

    def backward(self, g):  # split the gradient where the inputs were joined
        return tuple(backend.xp_of(g).split(g, self.bounds, axis=self.dim))


class Stack(Function):
    def forward(self, *arrays, dim=0):
        shapes = {a.shape for a in arrays}
        if len(shapes) != 1:
            raise ValueError(f"stack: all tensors need the same shape, got {[tuple(a.shape) for a in arrays]}")
        self.dim = dim
        return backend.xp_of(arrays[0]).stack(arrays, axis=dim)

    def backward(self, g):  # take each input's slice of the gradient
        return tuple(backend.xp_of(g).moveaxis(g, self.dim, 0))


def _check_same_shape_except(arrays, dim, op):
    ndim = arrays[0].ndim
    ref = [n for i, n in enumerate(arrays[0].shape) if i != dim % max(ndim, 1)]
    for a in arrays[1:]:
        if a.ndim != ndim or [n for i, n in enumerate(a.shape) if i != dim % ndim] != ref:
            raise ValueError(f"{op}: shapes {[tuple(x.shape) for x in arrays]} differ outside dim {dim}")
