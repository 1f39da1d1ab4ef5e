"""cupyx as far as the project touches it: scatter_add/max/min and allow_synchronize (the stand-in's sync guard)."""
from cupy._core import (NAMES, DeviceSynchronized, allow_synchronize, ndarray, _index, _kernel_arg, record_launch,
                        refuse_overlap)

import numpy


def _integer_arrays(key):
    """The index arrays of key when it is integer arrays only (one, or a tuple), broadcast together; else None."""
    parts = key if isinstance(key, tuple) else (key,)
    if not all(isinstance(p, numpy.ndarray) and p.dtype.kind in "iu" for p in parts):
        return None
    return numpy.broadcast_arrays(*parts)


def _scatter(np_ufunc):
    def scatter(a, slices, value):
        """On a GPU each element is added by an atomic operation, in no fixed order: float sums then differ in their
        last bits from run to run. The stand-in adds integer-array scatters in a random order for the same reason."""
        if not isinstance(a, ndarray):
            raise TypeError(f"Unsupported type {type(a)}")
        refuse_overlap("cupyx.scatter_" + np_ufunc.__name__.replace("imum", ""), a, [value])
        key, value = _index(slices), _kernel_arg(value)
        parts = _integer_arrays(key) if np_ufunc is numpy.add else None
        if parts is not None and parts[0].size > 1:
            n, k = parts[0].size, len(parts)
            values = numpy.broadcast_to(value, parts[0].shape + a.shape[k:]).reshape((n,) + a.shape[k:])
            order = numpy.random.default_rng().permutation(n)   # fresh entropy: another order each call
            np_ufunc.at(a._a, tuple(p.reshape(n)[order] for p in parts), values[order])
        else:
            np_ufunc.at(a._a, key, value)
        record_launch("scatter")
    return scatter


scatter_add, scatter_max, scatter_min = _scatter(numpy.add), _scatter(numpy.maximum), _scatter(numpy.minimum)


def __getattr__(name):
    if name in NAMES["cupyx"]:
        raise NotImplementedError(f"cupyx.{name} exists in CuPy but the CuPy stand-in does not model it")
    raise AttributeError(f"module 'cupyx' has no attribute '{name}'")


_ = DeviceSynchronized, allow_synchronize
