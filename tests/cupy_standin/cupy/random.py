"""cupy.random's Generator API: default_rng, Generator, XORWOW, with only the methods CuPy 14.2's Generator has.

The bit generator keeps its whole state in the device array `_state`, as CuPy's cuRAND generators do (there it is
the cuRAND states, 12.4 MiB on a GPU of 132 multiprocessors); here it is as large, and its first 16 bytes hold a seed
and a counter: each draw takes NumPy's generator for (seed, counter) and moves the counter on. Copying `_state` out
and back therefore resumes the stream exactly.
"""
import numpy

from ._core import NAMES, ndarray, _wrap, record_launch, record_memcpy


# CuPy's XORWOW generator keeps one 48-byte curandState for each of 8 * 256 threads per multiprocessor
# (cupy/random/_bit_generator.pyx, _cuRANDGenerator); the stand-in's GPU has an H100's or H200's 132: 12.4 MiB
MULTIPROCESSORS = 132
STATE_BYTES = 48 * 8 * 256 * MULTIPROCESSORS


class BitGenerator:
    def __init__(self, seed=None):
        if isinstance(seed, ndarray):
            raise TypeError("the stand-in takes host seeds only")
        self._seed_seq = seed if isinstance(seed, numpy.random.SeedSequence) else numpy.random.SeedSequence(seed)
        state = numpy.zeros(STATE_BYTES, dtype=numpy.int8)   # the first 16 bytes: the seed and the draw counter
        state[:16].view(numpy.uint64)[0] = self._seed_seq.generate_state(1, numpy.uint64)[0]
        self._state = _wrap(state)

    def _next(self):
        """NumPy's generator for this draw (the device state moves on by one)."""
        words = self._state._a[:16].view(numpy.uint64)
        rng = numpy.random.default_rng([int(words[0]), int(words[1])])
        words[1] += 1
        return rng

    def random_raw(self, size=None, output=True):
        y = _wrap(self._next().integers(0, 2**32, size=size, dtype=numpy.uint64).astype(numpy.int32))
        return y if output else None

    def state(self):
        return id(self._state._a)


class XORWOW(BitGenerator):
    pass


class MRG32k3a(BitGenerator):
    pass


class Philox4x3210(BitGenerator):
    pass


def _draw_launches(method, out, dtype):
    """What one draw launches on CuPy 14.2 (cupy/random/_generator_api.pyx): one cuRAND kernel (none for size 0),
    and for `integers` a uint32 (uint64 for ranges past 2**32) temporary that `cupy.add(low, y, dtype=dtype)`
    turns into the result: a second, elementwise kernel; for `uniform` `low + (high - low) * y` on 0-d device
    arrays (three elementwise kernels, float64 by NEP 50) and an astype copy for another dtype."""
    if not out.size:
        return {}
    if method == "integers":
        return {"random": 1, "elementwise": 1}
    if method == "uniform":
        return {"random": 1, "elementwise": 3, "copy": int(dtype is not None and numpy.dtype(dtype) != numpy.float64)}
    return {"random": 1}


def _draw(method):
    def draw(self, *args, **kwargs):
        dtype = kwargs.pop("dtype", None)
        if method == "integers" and dtype is not None:
            kwargs["dtype"] = dtype   # bounds checked against dtype (ValueError), as CuPy does
        args = [a._a if isinstance(a, ndarray) else a for a in args]
        kwargs = {k: (v._a if isinstance(v, ndarray) else v) for k, v in kwargs.items()}
        out = getattr(self.bit_generator._next(), method)(*args, **kwargs)
        out = numpy.asarray(out)
        for kind, n in _draw_launches(method, out, dtype).items():
            record_launch(kind, n)
        if method == "uniform":
            record_memcpy("h2d", 2)   # cupy.asarray(low), cupy.asarray(high)
        return _wrap(out.astype(dtype, copy=False) if dtype is not None else out)
    draw.__name__ = method
    return draw


class Generator:
    """cupy.random.Generator: only the methods CuPy 14.2.0's Generator has (no normal, permutation, shuffle, choice)."""

    def __init__(self, bit_generator):
        self.bit_generator = bit_generator


for _name in NAMES["cupy.random.Generator"]:
    setattr(Generator, _name, _draw(_name))


def default_rng(seed=None):
    if isinstance(seed, BitGenerator):
        return Generator(seed)
    if isinstance(seed, Generator):
        return seed
    return Generator(XORWOW(seed))


def _not_modelled(name):
    def f(*args, **kwargs):
        raise NotImplementedError(f"cupy.random.{name} exists in CuPy but the CuPy stand-in does not model it "
                                  "(the project uses the Generator API)")
    return f


for _name in NAMES["cupy.random"]:
    if _name not in globals():
        globals()[_name] = _not_modelled(_name)
del _name
