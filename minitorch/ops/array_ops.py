"""The functions a backward is written with, for an array or a Tensor alike.

A backward gets arrays on the fast path and Tensors under create_graph=True (the engine hands it the graph's
Tensors). Operators (+ - * / ** @, indexing, reshape, .T) already work on both; these functions cover the rest, so
that each op keeps one backward: an array gives an array (the NumPy/CuPy call), a Tensor gives a Tensor (through a
differentiable op).

    from minitorch.autograd import Function
    from minitorch.ops import array_ops as A

    class Softplus(Function):                 # y = log(1 + exp(a)),  dy/da = sigmoid(a)
        def forward(self, a):
            self.save_for_backward(a)         # inputs (or the output), not arrays computed from them
            return A.log(1 + A.exp(a))
        def backward(self, g):
            a, = self.saved_tensors
            return g * A.sigmoid(a)           # not np.exp: under create_graph `a` is a Tensor
"""
import builtins
import functools
import math

import numpy as np

from .. import backend
from ..core import Value
from .special import erf_array


_VALUES = (*backend.ARRAY_TYPES, np.generic)
HALF = np.dtype(np.float16)   # the dtype that mixed precision computes in float32 where it sums (fused/precision.py)


@functools.lru_cache(maxsize=256)
def broadcasts_to(shape, target):
    """True when an array of `shape` broadcasts to `target` without enlarging it (a mask: remembered, since a model
    asks about the same few shapes)."""
    try:
        return np.broadcast_shapes(shape, target) == target
    except ValueError:
        return False


def is_array(x):
    """True for an array or a NumPy scalar (what the fast path computes with), False for a Tensor."""
    return isinstance(x, _VALUES)


def normalize_dims(dim, ndim):
    """dim (None, int or tuple, negatives allowed) -> a sorted tuple of non-negative axes."""
    if dim is None:
        return tuple(range(ndim))
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    out, n = [], builtins.max(ndim, 1)  # (this module's max is the array-or-Tensor one)
    for d in dims:
        if not -n <= d < n:
            raise IndexError(f"dim {d} is out of range for a tensor with {ndim} dims")
        out.append(d % n)
    if len(set(out)) != len(out):
        raise ValueError(f"dim {dim} names an axis twice")
    if ndim == 0:  # a 0-d tensor accepts dim 0 / -1 (as PyTorch does) but has no axis to reduce
        return ()
    return tuple(sorted(out))


def exp(x):
    """exp(x), elementwise."""
    return backend.xp_of(x).exp(x) if is_array(x) else x.exp()


def sin(x):
    """sin(x), elementwise."""
    return backend.xp_of(x).sin(x) if is_array(x) else x.sin()


def cos(x):
    """cos(x), elementwise."""
    return backend.xp_of(x).cos(x) if is_array(x) else x.cos()


def log(x):
    """The natural log of a number, an array or a Tensor."""
    if isinstance(x, (int, float)):
        return math.log(x)
    return backend.xp_of(x).log(x) if is_array(x) else x.log()


def sqrt(x):
    """sqrt(x), elementwise."""
    return backend.xp_of(x).sqrt(x) if is_array(x) else x.sqrt()


def tanh(x):
    """tanh(x), elementwise."""
    return backend.xp_of(x).tanh(x) if is_array(x) else x.tanh()


def sigmoid(x):
    """1 / (1 + exp(-x)), elementwise, computed as 0.5 (1 + tanh(x / 2)), which never overflows."""
    return 0.5 * (1 + backend.xp_of(x).tanh(0.5 * x)) if is_array(x) else x.sigmoid()


def erf(x):
    """The error function, elementwise (special.py: to about 1e-15, on either device)."""
    return erf_array(x) if is_array(x) else x.erf()


def abs(x):
    """|x|, elementwise (its derivative, the sign, is 0 at 0)."""
    return backend.xp_of(x).abs(x) if is_array(x) else x.abs()


def clip(x, low, high):
    """x limited to [low, high]; as a Tensor, its derivative is 1 inside (bounds included) and 0 outside."""
    return backend.xp_of(x).clip(x, low, high) if is_array(x) else x.clamp(low, high)


def where(cond, a, b):
    """a where cond (a bool array) else b, with broadcasting; a and b arrays, Tensors or numbers."""
    if isinstance(a, Value):
        return a.where(cond, b)
    if isinstance(b, Value):
        return b.where(~cond, a)
    return backend.xp_of(cond).where(cond, a, b)


def sum(x, dim=None, keepdim=False):
    """x summed over dim (None: all; an int or a tuple)."""
    dims = normalize_dims(dim, x.ndim)
    return x.sum(axis=dims, keepdims=keepdim) if is_array(x) else x.sum(dim=dims, keepdim=keepdim)


def mean(x, dim=None, keepdim=False):
    """The mean of x over dim (None: all; an int or a tuple)."""
    dims = normalize_dims(dim, x.ndim)
    return x.mean(axis=dims, keepdims=keepdim) if is_array(x) else x.mean(dim=dims, keepdim=keepdim)


def max(x, dim=None, keepdim=False):
    """The largest values of x over dim; as a Tensor, tied maxima share the gradient (Tensor.amax)."""
    dims = normalize_dims(dim, x.ndim)
    return x.max(axis=dims, keepdims=keepdim) if is_array(x) else x.amax(dim=dims, keepdim=keepdim)


def broadcast_to(x, shape):
    """x repeated along its size-1 and missing leading axes to `shape` (a read-only view for an array)."""
    return backend.xp_of(x).broadcast_to(x, shape) if is_array(x) else x.expand(*shape)


def permute(x, dims):
    """x with its axes in the order `dims`."""
    return x.transpose(dims) if is_array(x) else x.permute(dims)


def swap_last(x):
    """x with its last two axes swapped (the matrix transpose of each matrix in a batch)."""
    return x.swapaxes(-1, -2) if is_array(x) else x.transpose(-1, -2)


def astype(x, dtype):
    """x converted to `dtype`."""
    return x.astype(dtype) if is_array(x) else x.to(dtype=dtype)


def to_device(x, device):
    """x moved to `device` ('cpu' or 'cuda')."""
    return backend.to_device(x, device) if is_array(x) else x.to(device)


__all__ = ["exp", "sin", "cos", "log", "sqrt", "sigmoid", "tanh", "erf", "abs", "where", "clip", "sum", "mean", "max",
           "broadcast_to", "permute", "swap_last", "astype", "to_device", "is_array", "normalize_dims"]
