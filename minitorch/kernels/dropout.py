"""Dropout and DropoutAdd on each device: on the GPU one kernel after the random draw (mask, scale and sum fused); on
the CPU in place, with the bool mask saved as the reference saves it."""
from .. import backend
from ..core import kernel
from ..ops import Dropout, DropoutAdd, keep_mask, keep_threshold


@backend.fuse
def dropout_kernel(xp, a, words, threshold, scale):
    """(a * m * scale, m) with the keep mask m = words >= threshold, in one kernel after the one random draw."""
    keep = words >= threshold
    return a * keep * scale, keep


@backend.fuse
def scale_by_mask(xp, g, keep, scale):
    """g * m * scale in one kernel: the gradient of a dropout (and its output, rebuilt from the saved mask)."""
    return g * keep * scale


@backend.fuse
def dropout_add_kernel(xp, x, y, words, threshold, scale):
    """(x + y * m * scale, m) with the keep mask m = words >= threshold, in one kernel."""
    keep = words >= threshold
    return x + y * keep * scale, keep


@kernel(Dropout, "cuda")
class DropoutCuda(Dropout):
    """One kernel forward (dropout_kernel), one backward (scale_by_mask)."""

    def forward(self, a, words, *, p):
        self.scale = 1.0 / (1.0 - p)
        out, keep = dropout_kernel(a, words, keep_threshold(p, backend.xp_of(a)), a.dtype.type(self.scale))
        self.save_for_backward(keep)
        return out

    def backward(self, g):
        keep, = self.saved_tensors
        return scale_by_mask(g, keep, g.dtype.type(self.scale)), None


@kernel(Dropout, "cpu")
class DropoutCpu(Dropout):
    """The product and the scale in one buffer (the reference makes two temporaries)."""

    def forward(self, a, words, *, p):
        keep = keep_mask(words, p)
        self.save_for_backward(keep)
        self.scale = 1.0 / (1.0 - p)
        out = a * keep
        out *= self.scale  # a Python float: the product keeps a's dtype
        return out

    def backward(self, g):
        keep, = self.saved_tensors
        dx = g * keep
        dx *= self.scale
        return dx, None


@kernel(DropoutAdd, "cuda")
class DropoutAddCuda(DropoutAdd):
    """One kernel forward (dropout_add_kernel) where a Dropout and an Add take three; one backward."""

    def forward(self, x, y, words, *, p):
        self.scale = 1.0 / (1.0 - p)
        out, keep = dropout_add_kernel(x, y, words, keep_threshold(p, backend.xp_of(y)), y.dtype.type(self.scale))
        self.save_for_backward(keep)
        return out

    def backward(self, g):
        keep, = self.saved_tensors
        return g, scale_by_mask(g, keep, g.dtype.type(self.scale)), None


@kernel(DropoutAdd, "cpu")
class DropoutAddCpu(DropoutAdd):
    """In one buffer: y * m, scaled, plus x."""

    def forward(self, x, y, words, *, p):
        keep = keep_mask(words, p)
        self.save_for_backward(keep)
        self.scale = 1.0 / (1.0 - p)
        out = y * keep
        out *= self.scale
        out += x
        return out

    def backward(self, g):
        keep, = self.saved_tensors
        dy = g * keep
        dy *= self.scale
        return g, dy, None
