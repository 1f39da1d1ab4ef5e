"""cupy.linalg as far as the project calls it: `norm`, following CuPy 14.2's cupy/linalg/_norms.py step by step (so
its launches are counted as CuPy makes them); the other names raise NotImplementedError."""
import numpy

from ._core import NAMES, ndarray, record_launch, _wrap


def norm(x, ord=None, axis=None, keepdims=False):
    """cupy.linalg.norm: vector norms (ord None, 2, 1, inf, -inf, 0, p) and the Frobenius, 1 and inf matrix norms."""
    import cupy
    if not isinstance(x, ndarray):
        raise TypeError(f"Unsupported type {type(x)}")
    if not issubclass(x.dtype.type, numpy.inexact):
        x = x.astype(float)
    if axis is None and (ord is None or (x.ndim == 1 and ord == 2) or (x.ndim == 2 and ord in ("f", "fro"))):
        ret = cupy.sqrt((x * x).sum())
        return ret.reshape((1,) * x.ndim) if keepdims else ret
    axis = tuple(range(x.ndim)) if axis is None else axis if isinstance(axis, tuple) else (int(axis),)
    if len(axis) == 1:
        if ord == numpy.inf:
            return abs(x).max(axis=axis, keepdims=keepdims)
        if ord == -numpy.inf:
            return abs(x).min(axis=axis, keepdims=keepdims)
        if ord == 0:
            return (x != 0).astype(x.real.dtype).sum(axis=axis, keepdims=keepdims)
        if ord == 1:
            return abs(x).sum(axis=axis, keepdims=keepdims)
        if ord is None or ord == 2:   # one reduction kernel (_norm_ord2): squares, sum and sqrt together
            result = _wrap(numpy.sqrt(numpy.sum(x._a * x._a, axis=axis, keepdims=keepdims)))
            record_launch("reduction")
            return result
        absx = abs(x)
        absx **= ord
        ret = absx.sum(axis=axis, keepdims=keepdims)
        ret **= cupy.reciprocal(ord, dtype=ret.dtype)
        return ret
    if len(axis) == 2:
        row, col = (a + x.ndim if a < 0 else a for a in axis)
        kept = [1 if i in (row, col) else n for i, n in enumerate(x.shape)]
        if ord in (None, "f", "fro"):
            ret = cupy.sqrt((abs(x) ** 2).sum(axis=axis))
        elif ord in (1, -1):
            col -= col > row
            ret = abs(x).sum(axis=row)
            ret = ret.max(axis=col) if ord == 1 else ret.min(axis=col)
        elif ord in (numpy.inf, -numpy.inf):
            row -= row > col
            ret = abs(x).sum(axis=col)
            ret = ret.max(axis=row) if ord == numpy.inf else ret.min(axis=row)
        else:
            raise NotImplementedError(f"cupy.linalg.norm(ord={ord!r}) of matrices (an SVD) is not modelled by the "
                                      "CuPy stand-in")
        return ret.reshape(kept) if keepdims else ret
    raise ValueError("Improper number of dimensions to norm.")


def _not_modelled(name):
    def f(*args, **kwargs):
        raise NotImplementedError(f"cupy.linalg.{name} exists in CuPy but the CuPy stand-in does not model it (the "
                                  "project calls cupy.linalg.norm only)")
    f.__name__ = name
    return f


for _name in (k.rsplit(".", 1)[1] for k in NAMES["signatures"] if k.startswith("cupy.linalg.")):
    if _name not in globals():
        globals()[_name] = _not_modelled(_name)


def __getattr__(name):
    raise AttributeError(f"module 'cupy.linalg' has no attribute '{name}'")
