"""The factories that make tensors: tensor(), from_numpy(), zeros(), ones(), full(), randn(), rand(), arange() and
the *_like forms."""
import numpy as np

from . import backend
from .tensor import Tensor, resolve_dtype


def tensor(data, dtype=None, requires_grad=False, device=None):
    """A new tensor (copying data). Floats default to float32; bool and integer data keep their kind."""
    return Tensor(data, requires_grad=requires_grad, dtype=dtype, device=device)


def from_numpy(array, requires_grad=False):
    """A tensor that shares memory and dtype with a NumPy array."""
    t = Tensor._make(np.asarray(array))
    return t.requires_grad_(True) if requires_grad else t


def _shape_args(shape):
    return tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else tuple(shape)


def _factory(fill, shape, dtype, device, requires_grad):
    device = backend.check_device(device or "cpu")
    t = Tensor._make(fill(backend.xp_of_device(device), _shape_args(shape), resolve_dtype(dtype) or np.float32))
    return t.requires_grad_(True) if requires_grad else t


def zeros(*shape, dtype=None, device=None, requires_grad=False):
    return _factory(lambda xp, s, d: xp.zeros(s, dtype=d), shape, dtype, device, requires_grad)


def ones(*shape, dtype=None, device=None, requires_grad=False):
    return _factory(lambda xp, s, d: xp.ones(s, dtype=d), shape, dtype, device, requires_grad)


def full(shape, value, dtype=None, device=None, requires_grad=False):
    return _factory(lambda xp, s, d: xp.full(s, value, dtype=d), (shape,), dtype, device, requires_grad)


def randn(*shape, dtype=None, device=None, requires_grad=False):
    """Standard normal samples from the device's seeded generator (see manual_seed)."""
    dev = backend.check_device(device or "cpu")
    return _factory(lambda xp, s, d: backend.rng(dev).standard_normal(s, dtype=d), shape, dtype, device,
                    requires_grad)


def rand(*shape, dtype=None, device=None, requires_grad=False):
    """Uniform [0, 1) samples from the device's seeded generator."""
    dev = backend.check_device(device or "cpu")
    return _factory(lambda xp, s, d: backend.rng(dev).random(s, dtype=d), shape, dtype, device, requires_grad)


def arange(start, stop=None, step=1, dtype=None, device=None):
    """Like numpy.arange; integer arguments give int64."""
    device = backend.check_device(device or "cpu")
    xp = backend.xp_of_device(device)
    return Tensor._make(xp.arange(start, stop, step, dtype=resolve_dtype(dtype)) if stop is not None
                        else xp.arange(start, dtype=resolve_dtype(dtype)))


def zeros_like(t, dtype=None):
    return Tensor._make(backend.xp_of(t.data).zeros(t.shape, dtype=resolve_dtype(dtype) or t.dtype))


def ones_like(t, dtype=None):
    return Tensor._make(backend.xp_of(t.data).ones(t.shape, dtype=resolve_dtype(dtype) or t.dtype))


__all__ = ["tensor", "from_numpy", "zeros", "ones", "full", "randn", "rand", "arange", "zeros_like", "ones_like"]
