"""Gradient clipping by the global norm."""
import numpy as np

from ... import backend
from ...autograd import no_grad
from ...tensor import Tensor


def clip_grad_norm_(parameters, max_norm):
    """Scale all gradients in place so that their joint L2 norm is at most max_norm; return the norm before, a 0-d
    Tensor on the gradients' device.

    The norm and the scale stay on the device: reading the norm (float(), .item()) makes the host wait for the GPU,
    so a training step reads it once, with the loss (train/step.py)."""
    grads = [p.grad.data for p in parameters if p.grad is not None]
    if not grads:
        return Tensor._make(np.zeros((), dtype=np.float32))
    xp = backend.xp_of(grads[0])
    with no_grad():
        total = xp.sqrt(sum((g * g).sum() for g in grads))
        # min(1, max_norm / norm), computed where the gradients are; the 1e-6 (as in PyTorch) keeps a zero norm from
        # dividing by zero
        scale = xp.minimum(max_norm / (total + 1e-6), 1.0)
        if xp is not np or scale < 1.0:   # on the CPU reading the scale is free, and skips a multiply by 1
            for g in grads:
                g *= scale.astype(g.dtype, copy=False)
    return Tensor._make(xp.asarray(total))
