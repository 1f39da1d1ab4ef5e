"""The speed tricks of the fused ops, named, so that each op's code reads as its derivation.

The fused ops work on rows (..., n): a row's sum or its dot product with another row as one BLAS call, row blocks
that stay in the CPU's cache between passes, and elementwise functions written into the buffer of a new array. Each
helper says why it beats the plain NumPy expression. row_sums, row_dots and into take arrays or Tensors (a backward
runs on Tensors under create_graph=True), and joined_rows, the others arrays.
"""
import math
import operator

import numpy as np


from .. import backend
from ..ops import array_ops as A
from ..functions import cat

BLOCK_BYTES = 1 << 20  # row blocks of about 1 MB stay in the L2 cache between the passes over them


def row_sum(x):
    """x (M, n) -> (M,) sums of the rows, as a matrix-vector product with ones: one BLAS call that reads x once,
    faster than NumPy's sum along the last axis."""
    return x @ filled(x.shape[1], 1.0, x)


def row_dot(a, b):
    """a, b (M, n) -> (M,) dot product of each row of a with the same row of b, without the (M, n) product array."""
    return backend.xp_of(a).einsum("ij,ij->i", a, b)


def row_blocks(n_rows, row_bytes, device):
    """Row slices covering range(n_rows): blocks of about BLOCK_BYTES on the CPU, so that every pass over a block
    after the first reads from cache rather than memory; one block on a GPU, where each pass is one kernel."""
    step = max(1, n_rows if device != "cpu" else BLOCK_BYTES // max(row_bytes, 1))
    return [slice(i, i + step) for i in range(0, n_rows, step)]


def joined_rows(part, blocks, like):
    """part(r) for each row slice r of blocks, joined along the first axis. On arrays into one array of like's shape
    and dtype, made once: each block's result is copied in while in cache, then freed, so that the next block reuses
    its memory (a new array's first touch of fresh memory costs more than the arithmetic here). On Tensors (a
    backward under create_graph=True) the parts joined with cat."""
    if A.is_array(like):
        out = backend.xp_of(like).empty(like.shape, like.dtype)
        for r in blocks:
            out[r] = part(r)
        return out
    parts = [part(r) for r in blocks]
    return parts[0] if len(parts) == 1 else cat(parts)


def row_sums(a):
    """a (..., n) -> (..., 1) sums along the last axis, as a product with a vector of ones: one BLAS call, several
    times faster than NumPy's sum along a short last axis. a an array or a Tensor."""
    return (a @ filled(a.shape[-1], 1.0, a)).reshape(a.shape[:-1] + (1,))


_FILLED = {}   # (n, value, dtype, device) -> filled's vector


def filled(n, value, like):
    """(n,) of `value` in the dtype and on the device of `like` (an array or a Tensor), made once for each n, value,
    dtype and device and shared, read-only: the ones of row_sums, LayerNorm's 1 / n (a step asks for the same few)."""
    like = backend.array_of(like)
    key = (n, value, like.dtype, backend.device_of(like))
    if key not in _FILLED:
        if len(_FILLED) >= 256:   # (row lengths vary with the batch: remember the latest few hundred)
            _FILLED.clear()
        vector = backend.xp_of(like).full(n, value, like.dtype)
        if isinstance(vector, np.ndarray):   # (CuPy's arrays have no read-only flag)
            vector.flags.writeable = False
        _FILLED[key] = vector
    return _FILLED[key]


def row_dots(a, b):
    """a, b (M, n) -> (M, 1) dot product of each row of a with the same row of b: on arrays without the (M, n) product
    array (row_dot); on Tensors the sums of a * b."""
    if A.is_array(a) and A.is_array(b):
        return row_dot(a, b).reshape(-1, 1)
    return row_sums(a * b)


_NUMPY_FORMS = {"exp": np.exp, "multiply": np.multiply, "subtract": np.subtract, "true_divide": np.true_divide}
_TENSOR_FORMS = {"exp": A.exp, "multiply": operator.mul, "subtract": operator.sub, "true_divide": operator.truediv,
                 "masked": lambda s, mask: A.where(mask, s, -math.inf)}


def into(name, a, *args):
    """The elementwise function `name` of a and args, written into a's buffer: a is a new array that nothing else
    holds. exp, multiply, subtract and true_divide as NumPy's; masked(a, mask) puts -inf where the bool mask is False
    (a new array when the mask's batch dims broadcast a). On a Tensor (a backward under create_graph=True) the same
    function as a new Tensor: the op that made a may have saved it for its own backward, so a is not changed."""
    if type(a) is np.ndarray and name in _NUMPY_FORMS:   # (the CPU's arrays: no module lookup, on every op)
        return _NUMPY_FORMS[name](a, *args, out=a)
    if not A.is_array(a):
        return _TENSOR_FORMS[name](a, *args)
    xp = backend.xp_of(a)
    if name == "masked":
        mask, = args
        try:
            xp.copyto(a, -math.inf, where=~mask)
        except ValueError:   # the mask's batch dims broadcast a's (cheaper to try than to compare shapes each call)
            return xp.where(mask, a, -math.inf)
        return a
    return getattr(xp, name)(a, *args, out=a)
