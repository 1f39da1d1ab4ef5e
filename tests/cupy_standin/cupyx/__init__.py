"""cupyx as far as the project touches it: scatter_add/max/min and allow_synchronize (the stand-in's sync guard)."""
from cupy._core import NAMES, DeviceSynchronized, allow_synchronize, ndarray, _index, _kernel_arg, record_launch

import numpy


def _scatter(np_ufunc):
    def scatter(a, slices, value):
        if not isinstance(a, ndarray):
            raise TypeError(f"Unsupported type {type(a)}")
        np_ufunc.at(a._a, _index(slices), _kernel_arg(value))
        record_launch("scatter")
    return scatter


scatter_add, scatter_max, scatter_min = _scatter(numpy.add), _scatter(numpy.maximum), _scatter(numpy.minimum)


def __getattr__(name):
    if name in NAMES["cupyx"]:
        raise NotImplementedError(f"cupyx.{name} exists in CuPy but the CuPy stand-in does not model it")
    raise AttributeError(f"module 'cupyx' has no attribute '{name}'")


_ = DeviceSynchronized, allow_synchronize
