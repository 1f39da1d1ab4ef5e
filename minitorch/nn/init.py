"""Weight initialisers (in place, from the seeded generator of the tensor's device)."""
import math

from .. import backend


def _fill(t, sample):
    t.data[...] = sample(backend.rng(t.device), t.shape).astype(t.dtype)
    return t


def uniform_(t, low=0.0, high=1.0):
    return _fill(t, lambda g, s: g.uniform(low, high, s))


def normal_(t, mean=0.0, std=1.0):
    return _fill(t, lambda g, s: mean + std * g.standard_normal(s))


def zeros_(t):
    t.data[...] = 0
    return t


def ones_(t):
    t.data[...] = 1
    return t


def xavier_uniform_(t, gain=1.0, n_blocks=1):
    """U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)) (Glorot & Bengio, 2010); t is (fan_out, fan_in), or
    n_blocks such matrices stacked along dim 0 (a fused projection), each with the bound of its own shape."""
    fan_out, fan_in = t.shape[0] // n_blocks, t.shape[1] if t.ndim > 1 else 1
    a = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(t, -a, a)
