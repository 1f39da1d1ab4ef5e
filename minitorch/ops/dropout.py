"""Dropout, and dropout inside a residual sum. The random draw is an input: the entry point (functional.dropout)
draws the words, so that each op is a plain function of its inputs, replayed exactly when differentiated again."""
import math

from .. import backend
from ..core import Function


def random_words(shape, device):
    """Random uint16 words of `shape` from the device's generator: on the CPU the generator's raw 64-bit outputs, four
    words each (2.5-4x faster than integers(dtype=uint16)), on the GPU one draw of integers."""
    xp, rng = backend.xp_of_device(device), backend.rng(device)
    if device == "cpu":
        n = math.prod(shape)
        return rng.bit_generator.random_raw(-(-n // 4)).view(xp.uint16)[:n].reshape(shape)
    return rng.integers(0, 1 << 16, size=shape, dtype=xp.uint16)


def keep_threshold(p, xp):
    """The uint16 a random word must reach to be kept: P(keep) = 1 - p, p rounded to a multiple of 2^-16."""
    return xp.uint16(min(round(p * (1 << 16)), (1 << 16) - 1))


def keep_mask(words, p):
    """The bool mask words >= threshold: each element True with probability 1 - p (cheaper than drawing floats).
    Dropout and attention's dropout build their masks here from the same draw, so one seed gives both one mask."""
    return words >= keep_threshold(p, backend.xp_of(words))


def dropped_out(a, keep, scale):
    """a * m * scale in one new buffer: the product, then the scale in place (a * m * scale would make two arrays).
    scale is a Python float, so the product keeps a's dtype. a may be an array or a Tensor (backward under
    create_graph=True: the in-place scale on the fresh product is then a recorded op)."""
    out = a * keep
    if out.ndim == 0:  # (a 0-d product is a NumPy scalar, or a read-only Tensor: not written in place)
        return out * scale
    out *= scale
    return out


class Dropout(Function):
    """out = a * m / (1 - p), m = keep_mask(words, p), a bool mask saved for backward.  da = g * m / (1 - p)."""
    needs_float = True

    def forward(self, a, words, *, p):
        keep = keep_mask(words, p)
        self.save_for_backward(keep)
        self.scale = 1.0 / (1.0 - p)
        return dropped_out(a, keep, self.scale)

    def backward(self, g):
        keep, = self.saved_tensors
        return dropped_out(g, keep, self.scale), None


class DropoutAdd(Function):
    """out = x + y * m / (1 - p) for x, y of one shape (a residual connection around a dropped-out sub-layer), with m
    drawn as Dropout draws it (the same mask for a seed).  dx = g,  dy = g * m / (1 - p)."""
    needs_float = True

    def forward(self, x, y, words, *, p):
        keep = keep_mask(words, p)
        self.save_for_backward(keep)
        self.scale = 1.0 / (1.0 - p)
        out = dropped_out(y, keep, self.scale)
        out += x                                          # in the buffer of the dropped-out y
        return out

    def backward(self, g):
        keep, = self.saved_tensors
        return g, dropped_out(g, keep, self.scale), None
