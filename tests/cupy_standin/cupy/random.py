"""cupy.random's Generator API: default_rng, Generator, XORWOW, with only the methods CuPy 13.6's Generator has.

The bit generator keeps its whole state in the device array `_state`, as CuPy's cuRAND generators do (there it is
the cuRAND states); here it is 16 bytes, a seed and a counter, and each draw takes NumPy's generator for
(seed, counter) and moves the counter on. Copying `_state` out and back therefore resumes the stream exactly.
"""
import numpy

from ._core import NAMES, ndarray, _wrap, record_launch


class BitGenerator:
    def __init__(self, seed=None):
        if isinstance(seed, ndarray):
            raise TypeError("the stand-in takes host seeds only")
        self._seed_seq = seed if isinstance(seed, numpy.random.SeedSequence) else numpy.random.SeedSequence(seed)
        state = numpy.zeros(2, dtype=numpy.uint64)
        state[0] = self._seed_seq.generate_state(1, numpy.uint64)[0]
        self._state = _wrap(state.view(numpy.int8))

    def _next(self):
        """NumPy's generator for this draw (the device state moves on by one)."""
        words = self._state._a.view(numpy.uint64)
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


def _draw(method):
    def draw(self, *args, **kwargs):
        dtype = kwargs.pop("dtype", None)
        args = [a._a if isinstance(a, ndarray) else a for a in args]
        kwargs = {k: (v._a if isinstance(v, ndarray) else v) for k, v in kwargs.items()}
        out = getattr(self.bit_generator._next(), method)(*args, **kwargs)
        out = numpy.asarray(out)
        record_launch("random")  # one cuRAND kernel (uniform's bounds are copied to the device first)
        return _wrap(out.astype(dtype, copy=False) if dtype is not None else out)
    draw.__name__ = method
    return draw


class Generator:
    """cupy.random.Generator: only the methods CuPy 13.6.0's Generator has (no normal, permutation, shuffle, choice)."""

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
