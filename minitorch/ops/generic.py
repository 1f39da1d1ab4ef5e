"""The few array functions that backward passes call, for an array or a Tensor alike.

A backward pass gets arrays on the fast path and Tensors under create_graph=True (autograd). Operators (+ - * /
** @, indexing, reshape, .T) already work on both; these functions cover the rest, so that each op keeps one backward.
An array gives an array (the NumPy/CuPy call), a Tensor gives a Tensor (through a differentiable op).
"""
import math

import numpy as np

from .. import backend


def is_array(x):
    """True for an array or a NumPy scalar (what the fast path computes with), False for a Tensor."""
    return backend.is_array(x) or isinstance(x, np.generic)


def broadcast_to(x, shape):
    """x repeated along its size-1 and missing leading axes to `shape` (a read-only view for an array)."""
    if is_array(x):
        return backend.xp_of(x).broadcast_to(x, shape)
    from .shape import Expand
    return Expand.apply(x, shape=tuple(shape))


def index_add(g, index, shape, advanced):
    """zeros(shape) with g added at `index`: repeated positions add up when the index is `advanced` (integer arrays)."""
    if is_array(g):
        out = backend.xp_of(g).zeros(shape, dtype=g.dtype)
        if advanced:
            backend.scatter_add(out, index, g)
        else:
            out[index] = g
        return out
    from .shape import IndexAdd
    return IndexAdd.apply(g, index=index, shape=tuple(shape), advanced=advanced)


def sum_axes(x, axes, keepdims=False):
    """x summed over `axes` (a tuple of non-negative ints)."""
    return x.sum(axis=axes, keepdims=keepdims) if is_array(x) else x.sum(dim=axes, keepdim=keepdims)


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


def log(x):
    """The natural log of a number, an array or a Tensor."""
    if isinstance(x, (int, float)):
        return math.log(x)
    return backend.xp_of(x).log(x) if is_array(x) else x.log()


def tanh(x):
    """tanh of an array or a Tensor."""
    return backend.xp_of(x).tanh(x) if is_array(x) else x.tanh()


def clip(x, low, high):
    """x limited to [low, high]; as a Tensor, its derivative is 1 inside and 0 outside."""
    if is_array(x):
        return backend.xp_of(x).clip(x, low, high)
    from ..tensor import where
    return where(x > high, high, where(x < low, low, x))
