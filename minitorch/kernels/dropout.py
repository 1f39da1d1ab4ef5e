"""Dropout and DropoutAdd on the GPU: one kernel after the random draw (mask, scale and sum fused). The CPU runs the
reference ops (ops/dropout.py)."""
from .. import backend
from ..core import kernel
from ..ops import Dropout, DropoutAdd, keep_threshold


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
