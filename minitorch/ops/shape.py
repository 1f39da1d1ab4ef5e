"""Shape and indexing ops: reshape, transpose, permute, getitem, embedding, cat, stack, and expand and index-add (the
backward passes of reductions and getitem, as ops for create_graph=True). Forwards return views where NumPy can."""
import numpy as np

from .. import backend
from ..core import Function, View, fresh_gradients
from . import array_ops as A


class Reshape(View):
    def forward(self, a, *, shape):
        self.in_shape = a.shape
        try:
            return a.reshape(shape)
        except ValueError:
            raise ValueError(f"reshape: cannot reshape a tensor of shape {tuple(a.shape)} "
                             f"({a.size} elements) into {tuple(shape)}") from None

    def backward(self, g):  # reshaping the gradient back
        return g.reshape(self.in_shape)


class Permute(View):
    def forward(self, a, *, dims):
        n = a.ndim
        self.inverse = inverse = [None] * n   # where each of a's dims went
        for i, d in enumerate(dims):
            if not -n <= d < n or inverse[d % n] is not None:
                raise ValueError(f"permute: {tuple(dims)} is not a permutation of the {n} dims of {tuple(a.shape)}")
            inverse[d % n] = i
        return a.transpose(dims)

    def backward(self, g):  # the inverse permutation
        return A.permute(g, self.inverse)


class SplitHeads(View):
    """x (B, T, h d) -> (B, h, T, d), or with n: x (B, T, n h d) -> (n, B, h, T, d): a projection (n of them side
    by side) split into h heads of d dims. The view reshape + permute make, as one node (attention's heads are split
    in every layer of every step). Backward: the heads put back side by side, the inverse permute and reshape."""
    def forward(self, x, *, n_heads, n=None):
        B, T, width = self.in_shape = x.shape
        if n is None:
            self.inverse = (0, 2, 1, 3)                       # (B, h, T, d) -> (B, T, h, d)
            return x.reshape(B, T, n_heads, width // n_heads).transpose(0, 2, 1, 3)
        self.inverse = (1, 3, 0, 2, 4)                        # (n, B, h, T, d) -> (B, T, n, h, d)
        return x.reshape(B, T, n, n_heads, width // (n * n_heads)).transpose(2, 0, 3, 1, 4)

    def backward(self, g):  # the inverse permutation, then the heads side by side
        return A.permute(g, self.inverse).reshape(self.in_shape)


class MergeHeads(View):   # a view only when the heads already lie side by side in memory (h or T is 1)
    """x (B, h, T, d) -> (B, T, h d): the heads' outputs side by side, Concat(head_1, ..., head_h). The permute +
    reshape that make it, as one node. Backward: split into heads again."""
    def forward(self, x):
        B, h, T, d = self.in_shape = x.shape
        return x.transpose(0, 2, 1, 3).reshape(B, T, h * d)

    def backward(self, g):
        B, h, T, d = self.in_shape
        return A.permute(g.reshape(B, T, h, d), (0, 2, 1, 3))


def index_add(g, index, shape, advanced):
    """zeros(shape) with g added at `index`: repeated positions add up when the index is `advanced` (integer arrays).
    An array gives an array; a Tensor (create_graph) a Tensor, through the IndexAdd op."""
    if A.is_array(g):
        out = backend.xp_of(g).zeros(shape, dtype=g.dtype)
        if advanced:
            backend.scatter_add(out, index, g)
        else:
            out[index] = g
        return out
    return IndexAdd.apply(g, index=index, shape=tuple(shape), advanced=advanced)


def _is_advanced(index):
    """True when an index holds integer arrays (repeated positions then need a scatter-add)."""
    parts = index if isinstance(index, tuple) else (index,)
    for p in parts:
        if isinstance(p, list) or (backend.is_array(p) and p.dtype.kind in "iu"):
            return True
    return False


class GetItem(View):
    """a[index] for basic (ints, slices, None, Ellipsis) and integer-array or bool-mask indexing: a view for basic
    indexing (View.apply checks the memory: other indexing copies)."""

    def forward(self, a, *, index):
        self.in_shape, self.index = a.shape, index
        self.advanced = _is_advanced(index)
        try:
            out = a[index]
            # one element: a 0-d view (a[index, ...]), not NumPy's scalar copy, so that t[i] += 1 changes t
            return out if backend.is_array(out) else a[(index if isinstance(index, tuple) else (index,)) + (...,)]
        except IndexError as e:
            raise IndexError(f"getitem: index {index!r} does not fit a tensor of shape {tuple(a.shape)}: {e}") from None

    def backward(self, g):  # gradient goes back to the picked places; repeats add up
        return index_add(g, self.index, self.in_shape, self.advanced)


@fresh_gradients   # dweight: the rows added into an array it makes
class Embedding(Function):
    """out = weight[ids]: ids (...) int, weight (n, d) -> (..., d).  dweight = g added into the rows named by ids
    (repeated ids add up); the padding row, a constant, gets none. ids are an input without a gradient."""

    def forward(self, ids, weight, *, padding_idx=None):
        self.save_for_backward(ids)
        self.weight_shape, self.padding_idx = weight.shape, padding_idx
        return weight[ids]

    def backward(self, g):
        ids, = self.saved_tensors
        d = self.weight_shape[-1]
        dweight = index_add(g.reshape(-1, d), ids.reshape(-1), self.weight_shape, advanced=True)
        if self.padding_idx is not None:
            if A.is_array(dweight):
                dweight[self.padding_idx] = 0
            else:  # a Tensor (create_graph): zero the row by a product, which stays differentiable
                rows = backend.xp_of(ids).ones((self.weight_shape[0], 1), dtype=dweight.dtype)
                rows[self.padding_idx] = 0
                dweight = dweight * rows
        return None, dweight


class IndexAdd(Function):
    """out = zeros(shape) with g added at index (repeats add up): getitem's backward as an op (create_graph=True)."""

    def forward(self, g, *, index, shape, advanced):
        self.index = index
        return index_add(g, index, shape, advanced)

    def backward(self, gg):  # linear in g: the adjoint picks the same places again
        return gg[self.index]


class Expand(View):
    """x broadcast to a larger shape (a read-only view): the backward of sum and mean as an op (create_graph=True)."""

    def forward(self, a, *, shape):
        return A.broadcast_to(a, shape)

    def backward(self, g):  # the engine's unbroadcast sums g back to a's shape
        return g


class Cat(Function):
    def forward(self, *arrays, dim=0):
        _check_same_shape_except(arrays, dim, "cat")
        out = backend.xp_of(arrays[0]).concatenate(arrays, axis=dim)
        self.dim = dim % out.ndim
        ends = np.cumsum([a.shape[dim] for a in arrays])
        self.spans = [slice(int(end) - a.shape[dim], int(end)) for a, end in zip(arrays, ends)]
        return out

    def backward(self, g):  # split the gradient where the inputs were joined (slices: views, as np.split gives)
        lead = (slice(None),) * self.dim
        return tuple(g[lead + (span,)] for span in self.spans)


class Stack(Function):
    def forward(self, *arrays, dim=0):
        shapes = {a.shape for a in arrays}
        if len(shapes) != 1:
            raise ValueError(f"stack: all tensors need the same shape, got {[tuple(a.shape) for a in arrays]}")
        out = backend.xp_of(arrays[0]).stack(arrays, axis=dim)
        self.dim, self.count = dim % out.ndim, len(arrays)
        return out

    def backward(self, g):  # take each input's slice of the gradient
        lead = (slice(None),) * self.dim
        return tuple(g[lead + (i,)] for i in range(self.count))


def _check_same_shape_except(arrays, dim, op):
    ndim = arrays[0].ndim
    ref = [n for i, n in enumerate(arrays[0].shape) if i != dim % max(ndim, 1)]
    for a in arrays[1:]:
        if a.ndim != ndim or [n for i, n in enumerate(a.shape) if i != dim % ndim] != ref:
            raise ValueError(f"{op}: shapes {[tuple(x.shape) for x in arrays]} differ outside dim {dim}")
