"""Gradient clipping by the global norm: one reduction and one scale per flat gradient buffer."""
import numpy as np

from ... import backend
from ...tensor import Tensor
from . import flat


@backend.fuse
def sum_of_squares(xp, g):
    """g (n,) -> sum(g^2), a 0-d array."""
    return xp.sum(g * g)


@backend.fuse
def scale_by_clip(xp, g, sum_sq, max_norm):
    """g *= min(1, max_norm / (sqrt(sum_sq) + 1e-6)): the scale is computed in the kernel, from the device's sum."""
    g *= xp.minimum(max_norm / (xp.sqrt(sum_sq) + 1e-6), 1.0)


def clip_grad_norm_(parameters, max_norm):
    """Scale all gradients in place so that their joint L2 norm is at most max_norm; return the norm before, a 0-d
    Tensor on the gradients' device.

    Given a FlatParameters (nn/utils/flat.py), one norm kernel and one scale kernel per flat gradient buffer; given
    parameters, one of each per gradient. The norm and the scale stay on the device: reading the norm (float(),
    .item()) makes the host wait for the GPU, so a training step reads it once, with the loss (train/loop/step.py)."""
    if isinstance(parameters, flat.FlatParameters):
        parameters.settle()   # takes back reassigned .grad (a slot of a None .grad holds zeros)
        grads = [buffer.grad for buffer in parameters.buffers]
    else:
        grads = [p.grad.data for p in dict.fromkeys(parameters) if p.grad is not None]
    if not grads:
        return Tensor._make(np.zeros((), dtype=np.float32))
    sum_sq = flat.run_sum(sum_of_squares, grads[0])
    for g in grads[1:]:
        sum_sq = sum_sq + flat.run_sum(sum_of_squares, g)
    xp = backend.xp_of(sum_sq)
    total = xp.sqrt(sum_sq)
    # 1e-6 (as in PyTorch) keeps a zero norm from dividing by zero; on the CPU reading the norm is free, and skips a
    # multiply by 1
    if xp is not np or max_norm / (total + 1e-6) < 1.0:
        for g in grads:
            flat.run(scale_by_clip, [g], sum_sq.astype(g.dtype, copy=False), g.dtype.type(max_norm))
    return Tensor._make(xp.asarray(total))
