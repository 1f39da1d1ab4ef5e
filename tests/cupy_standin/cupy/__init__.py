"""A strict stand-in for CuPy 14.2.0 that runs on the CPU, so that CI can run every device="cuda" path.

Only the names that CuPy 14.2.0 has exist here (cupy_names.json, made from CuPy's source by make_lists.py); each one
computes with NumPy behind CuPy's rules (see _core.py). Names that CuPy has but this stand-in does not model raise
NotImplementedError saying so. `cupy._standin` is the stand-in's own handle (the sync log, the launch counter);
real CuPy has none.
"""
import sys
import types

import numpy

from . import _core
from ._core import (NAMES, check_signature, ndarray, ufunc, _has_host_data, _unwrap, _wrap, record_call,
                    record_memcpy, record_sync)

__version__ = NAMES["cupy_version"]
_standin = _core  # tests read _standin.SYNCS; `hasattr(cupy, "_standin")` tells the stand-in from the real CuPy

# Functions that copy host data to the device: they take NumPy arrays and lists.
_FROM_HOST = {"array", "asarray", "asanyarray", "ascontiguousarray", "asfortranarray"}
# Host parameters that CuPy reads on the host (indices to split at, shapes, repeats): NumPy arrays are fine there.
_HOST_PARAMS = {"split": (1, "indices_or_sections"), "array_split": (1, "indices_or_sections"),
                "reshape": (1, "newshape"), "broadcast_to": (1, "shape"), "tile": (1, "reps"),
                "repeat": (1, "repeats"), "pad": (1, "pad_width"), "take": (1, "indices"), "transpose": (1, "axes"),
                "zeros": (0, "shape"), "ones": (0, "shape"), "empty": (0, "shape"), "full": (0, "shape")}
# Reductions and scans: their kernels do not guard an out= that overlaps the input.
_REDUCING = {"sum", "prod", "mean", "max", "min", "amax", "amin", "argmax", "argmin", "all", "any", "var", "std",
             "cumsum", "cumprod", "nansum", "nanprod", "nanmax", "nanmin", "nanmean"}
# Functions whose output shape depends on the data: the host waits for the count.
_DATA_SHAPED = {"nonzero", "argwhere", "flatnonzero", "unique", "extract", "compress", "setdiff1d", "intersect1d",
                "union1d", "setxor1d", "trim_zeros"}


def _function(name, np_func):
    host_ok = name in _FROM_HOST

    position, keyword = _HOST_PARAMS.get(name, (None, None))

    def f(*args, **kwargs):
        trace = getattr(_core.fusion_state, "trace", None)
        if trace is not None:
            return trace.function(name, args, kwargs)
        check_signature(f"cupy.{name}", args, kwargs)
        if name in _REDUCING:
            _core.refuse_overlap(f"cupy.{name}", kwargs.get("out"), args[:1])
        if name in _DATA_SHAPED or (name == "where" and len(args) + len(kwargs) == 1):
            record_sync(name)
        raw_args = [_unwrap(a, host_ok or i == position) for i, a in enumerate(args)]
        raw_kwargs = {k: _unwrap(v, host_ok or k == keyword) for k, v in kwargs.items()}
        result = np_func(*raw_args, **raw_kwargs)
        if host_ok and (_has_host_data(args[0] if args else kwargs.get("a", kwargs.get("obj")))):
            record_memcpy("h2d")  # host data copied to the device: a memcpy, no kernel
            return _wrap(numpy.array(result, copy=True))   # device memory of its own, never the host's
        if name in ("empty", "empty_like"):
            _uninitialised(result)
        result = _wrap(result)
        record_call(name, args, kwargs, result)
        return result
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"cupy.{name} (stand-in: numpy.{name} behind CuPy's rules)"
    return f


def _uninitialised(a):
    """What `cupy.empty` holds: memory never written (another kernel's leftovers on a GPU). NaN in floats and a byte
    pattern in integers, where NumPy's `empty` often hands out zeros, so that reading it before writing it shows."""
    if a.dtype.kind in "fc":
        a.fill(numpy.nan)
    elif a.dtype.kind == "b":
        a.fill(True)
    else:
        a.view(numpy.uint8).fill(0xA5)


def _not_modelled(qualname):
    def f(*args, **kwargs):
        raise NotImplementedError(f"{qualname} exists in CuPy {__version__} but the CuPy stand-in does not model it")
    f.__name__ = qualname.rsplit(".", 1)[-1]
    return f


class _NotModelledModule(types.ModuleType):
    def __getattr__(self, name):
        raise NotImplementedError(f"{self.__name__}.{name} exists in CuPy but the CuPy stand-in does not model it")


def asnumpy(a, stream=None, order="C", out=None, blocking=True):
    """A host copy of a device array (waits for the device); host data passes through."""
    if isinstance(a, ndarray):
        return a.get(order=order, out=out)
    return numpy.asarray(a, order=order)


def get_array_module(*args):
    return sys.modules[__name__] if any(isinstance(a, ndarray) for a in args) else numpy


def is_available():
    return True


class _MemoryPool:
    """cupy.cuda.MemoryPool's accounts (see _core._Pool); the pinned (host) pool keeps none."""

    def __init__(self, accounts=None):
        self._accounts = accounts

    def used_bytes(self):
        return self._accounts.used if self._accounts else 0

    def total_bytes(self):
        return self._accounts.held if self._accounts else 0

    def free_bytes(self):
        return self.total_bytes() - self.used_bytes()

    def free_all_blocks(self, stream=None):
        if self._accounts:
            self._accounts.held = self._accounts.used

    def set_limit(self, size=None, fraction=None):
        pass

    def get_limit(self):
        return 0


_pool, _pinned_pool = _MemoryPool(_core._Pool), _MemoryPool()


def get_default_memory_pool():
    return _pool


def get_default_pinned_memory_pool():
    return _pinned_pool


_OWN = {"ndarray": ndarray, "ufunc": ufunc, "asnumpy": asnumpy, "get_array_module": get_array_module,
        "is_available": is_available, "get_default_memory_pool": get_default_memory_pool,
        "get_default_pinned_memory_pool": get_default_pinned_memory_pool, "__version__": __version__}

from . import cuda, linalg, random  # noqa: E402  (they import this module's ndarray)
from ._fusion import fuse  # noqa: E402

_OWN.update(cuda=cuda, linalg=linalg, random=random, fuse=fuse)
_OWN["exceptions"] = numpy.exceptions   # cupy/exceptions re-exports NumPy's

_module = sys.modules[__name__]
for _name in NAMES["cupy"]:
    if _name in _OWN:
        setattr(_module, _name, _OWN[_name])
        continue
    _np = getattr(numpy, _name, None)
    if isinstance(_np, numpy.ufunc):
        setattr(_module, _name, ufunc(_np))
    elif isinstance(_np, (type, numpy.dtype, float, int)) or _name in ("newaxis",):
        setattr(_module, _name, _np)  # dtypes, scalar types, exceptions, constants: CuPy re-exports NumPy's
    elif callable(_np) and not isinstance(_np, types.ModuleType):
        setattr(_module, _name, _function(_name, _np))
    elif isinstance(_np, types.ModuleType) or _name in ("fft", "linalg", "polynomial", "sparse", "testing"):
        setattr(_module, _name, _NotModelledModule(f"cupy.{_name}"))
    else:
        setattr(_module, _name, _not_modelled(f"cupy.{_name}"))
# NumPy 2 made these plain functions or removed them; CuPy's names for them still work
for _name in ("abs", "absolute", "conj", "conjugate", "fmax", "fmin", "round", "around", "true_divide"):
    if _name in NAMES["cupy"] and isinstance(getattr(numpy, _name, None), numpy.ufunc):
        setattr(_module, _name, ufunc(getattr(numpy, _name)))
del _name, _np, _module
