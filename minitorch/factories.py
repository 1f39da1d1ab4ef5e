"""The factories that make tensors: tensor(), from_numpy(), zeros(), ones(), full(), randn(), rand(), arange(),
linspace(), eye(), randint(), randperm(), empty() and the *_like forms."""
import numpy as np

from . import backend
from .tensor import Tensor, resolve_dtype


INT64 = (-2 ** 63, 2 ** 63 - 1)


class IntegerOverflow(ValueError, RuntimeError):
    """A Python int that no int64 holds: PyTorch's error (a ValueError in PyTorch 2, a RuntimeError before)."""


def tensor(data, dtype=None, requires_grad=False, device=None):
    """A new tensor (copying data). Floats default to float32; bool and integer data keep their kind. A Python int
    beyond int64 is converted where dtype is a float or bool (or the data holds a float), else IntegerOverflow."""
    if device is None and backend.default_device != "cpu":   # else None: a GPU array given as data stays on the GPU
        device = backend.default_device
    if isinstance(data, (int, list, tuple)):
        data = _beyond_int64(data, resolve_dtype(dtype))
    return Tensor(data, requires_grad=requires_grad, dtype=dtype, device=device)


def _beyond_int64(data, dtype):
    """data as an array, its Python ints beyond int64 made floats (or bools) as PyTorch converts them. NumPy keeps
    such ints as an object or uint64 array, or (mixed with small ints) rounds them all to float64."""
    array = np.asarray(data)
    if array.dtype.kind == "f":   # rounded ints show as |x| >= 2^63; NaN compares false (a vectorised, cheap test)
        suspect = bool((np.abs(array) >= 2.0 ** 63).any())
    else:
        suspect = array.dtype in (np.dtype(object), np.dtype(np.uint64))
    if not suspect:   # the usual case: nothing to walk
        return array
    objects = np.array(data, dtype=object)   # the Python values themselves, not NumPy's float64 roundings
    flat = objects.ravel().tolist()
    huge = [v for v in flat if isinstance(v, int) and not isinstance(v, bool) and not INT64[0] <= v <= INT64[1]]
    if not huge:
        return array
    as_float = dtype.kind in "fc" if dtype is not None else any(isinstance(v, float) for v in flat)
    if not as_float and (dtype is None or dtype.kind != "b"):
        raise IntegerOverflow(f"tensor: the integer {huge[0]} does not fit in int64 ({INT64[0]} to {INT64[1]}): "
                              f"Overflow when unpacking long long; give dtype=mt.float32 (or float64) to convert it")
    # float(10**400) raises OverflowError, as PyTorch; the tensor then casts to dtype
    wide = np.float64 if dtype is None else np.result_type(dtype, np.float64)   # complex stays complex
    return objects.astype(wide if as_float else np.bool_)


def from_numpy(array, requires_grad=False):
    """A tensor that shares memory and dtype with a NumPy array."""
    t = Tensor._make(np.asarray(array))
    return t.requires_grad_(True) if requires_grad else t


def _shape_args(shape):
    return tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else tuple(shape)


def _factory(fill, shape, dtype, device, requires_grad, source=backend.xp_of_device):
    """fill(source(device), shape, dtype) as a tensor: source gives the device's array module, or (backend.rng) its
    seeded generator."""
    filler = source(backend.check_device(device))
    t = Tensor._make(fill(filler, _shape_args(shape), resolve_dtype(dtype) or np.float32))
    return t.requires_grad_(True) if requires_grad else t


def zeros(*shape, dtype=None, device=None, requires_grad=False):
    return _factory(lambda xp, s, d: xp.zeros(s, dtype=d), shape, dtype, device, requires_grad)


def ones(*shape, dtype=None, device=None, requires_grad=False):
    return _factory(lambda xp, s, d: xp.ones(s, dtype=d), shape, dtype, device, requires_grad)


def full(shape, value, dtype=None, device=None, requires_grad=False):
    return _factory(lambda xp, s, d: xp.full(s, value, dtype=d), (shape,), dtype, device, requires_grad)


def randn(*shape, dtype=None, device=None, requires_grad=False):
    """Standard normal samples from the device's seeded generator (see manual_seed)."""
    return _factory(lambda g, s, d: g.standard_normal(s, dtype=d), shape, dtype, device, requires_grad, backend.rng)


def rand(*shape, dtype=None, device=None, requires_grad=False):
    """Uniform [0, 1) samples from the device's seeded generator."""
    return _factory(lambda g, s, d: g.random(s, dtype=d), shape, dtype, device, requires_grad, backend.rng)


def arange(start, stop=None, step=1, dtype=None, device=None):
    """Like numpy.arange; integer arguments give int64, a float one float32 (PyTorch's default dtype)."""
    device = backend.check_device(device)
    xp = backend.xp_of_device(device)
    dtype = resolve_dtype(dtype) or (np.float32 if any(isinstance(v, float) for v in (start, stop, step)) else None)
    return Tensor._make(xp.arange(start, stop, step, dtype=dtype) if stop is not None
                        else xp.arange(start, dtype=dtype))


def zeros_like(t, dtype=None):
    return Tensor._make(backend.xp_of(t.data).zeros(t.shape, dtype=resolve_dtype(dtype) or t.dtype))


def ones_like(t, dtype=None):
    return Tensor._make(backend.xp_of(t.data).ones(t.shape, dtype=resolve_dtype(dtype) or t.dtype))


def _like(t, fill, dtype, requires_grad):
    """A new tensor of t's shape and device (and dtype, unless dtype says otherwise), filled by fill(xp, shape, d)."""
    d = resolve_dtype(dtype) or t.dtype
    out = Tensor._make(fill(backend.xp_of(t.data), t.shape, d))
    return out.requires_grad_(True) if requires_grad else out


def full_like(t, fill_value, dtype=None, requires_grad=False):
    return _like(t, lambda xp, s, d: xp.full(s, fill_value, dtype=d), dtype, requires_grad)


def empty(*shape, dtype=None, device=None, requires_grad=False):
    """A tensor of the shape (zeros here: NumPy's uninitialised memory would make runs differ)."""
    return zeros(*shape, dtype=dtype, device=device, requires_grad=requires_grad)


def empty_like(t, dtype=None, requires_grad=False):
    return _like(t, lambda xp, s, d: xp.zeros(s, dtype=d), dtype, requires_grad)


def rand_like(t, dtype=None, requires_grad=False):
    """Uniform [0, 1) samples shaped like t, from its device's seeded generator."""
    return _like(t, lambda xp, s, d: backend.rng(t.device).random(s, dtype=d), dtype, requires_grad)


def randn_like(t, dtype=None, requires_grad=False):
    """Standard normal samples shaped like t, from its device's seeded generator."""
    return _like(t, lambda xp, s, d: backend.rng(t.device).standard_normal(s, dtype=d), dtype, requires_grad)


def linspace(start, end, steps, dtype=None, device=None, requires_grad=False):
    """steps values evenly spaced from start to end, both included (torch.linspace; float32 unless dtype says)."""
    if not isinstance(steps, int) or isinstance(steps, bool) or steps < 0:
        raise ValueError(f"linspace: steps must be a non-negative int, got {steps!r}")
    return _factory(lambda xp, s, d: xp.linspace(start, end, steps).astype(d), (steps,), dtype, device,
                    requires_grad)


def eye(n, m=None, dtype=None, device=None, requires_grad=False):
    """The (n, m) identity matrix (m = n when omitted)."""
    return _factory(lambda xp, s, d: xp.eye(n, m, dtype=d), (n, n if m is None else m), dtype, device, requires_grad)


def _generator_rng(generator, device):
    return generator.rng if generator is not None else backend.rng(device)


def randint(*args, size=None, generator=None, dtype=None, device=None, requires_grad=False):
    """Integers drawn uniformly from [low, high): randint(high, size) or randint(low, high, size), as torch.randint
    (int64 unless dtype says; from generator, or the device's seeded generator)."""
    if size is None and args and isinstance(args[-1], (tuple, list)):
        *args, size = args
    if size is None or len(args) not in (1, 2):
        raise TypeError("randint: give (high, size) or (low, high, size), size a tuple")
    low, high = (0, args[0]) if len(args) == 1 else args
    device = backend.check_device(device)
    values = _generator_rng(generator, "cpu").integers(low, high, size=tuple(size))
    t = Tensor._make(backend.to_device(values.astype(resolve_dtype(dtype) or np.int64), device))
    return t.requires_grad_(True) if requires_grad else t


def randperm(n, generator=None, dtype=None, device=None):
    """A random permutation of 0..n-1 (int64), from generator or the host's seeded generator."""
    device = backend.check_device(device)
    values = _generator_rng(generator, "cpu").permutation(n).astype(resolve_dtype(dtype) or np.int64)
    return Tensor._make(backend.to_device(values, device))


__all__ = ["tensor", "from_numpy", "zeros", "ones", "full", "randn", "rand", "arange", "zeros_like", "ones_like",
           "full_like", "empty", "empty_like", "rand_like", "randn_like", "linspace", "eye", "randint", "randperm"]


def _legacy(dtype, name):
    """PyTorch's legacy constructor torch.{name}: from data (a list, an array) or, given ints, zeros of that shape
    (PyTorch leaves them uninitialised)."""
    def make(*args):
        if args and all(isinstance(a, int) and not isinstance(a, bool) for a in args):
            return zeros(*args, dtype=dtype)
        if len(args) != 1:
            raise TypeError(f"{name}(): give one sequence of data, or the sizes as ints, got {args!r}")
        return tensor(args[0], dtype=dtype)
    make.__name__ = make.__qualname__ = name
    return make


LongTensor = _legacy(np.int64, "LongTensor")
FloatTensor = _legacy(np.float32, "FloatTensor")
DoubleTensor = _legacy(np.float64, "DoubleTensor")
BoolTensor = _legacy(np.bool_, "BoolTensor")
