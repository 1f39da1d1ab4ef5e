"""Gradient clipping by the global norm."""
import math

from ...autograd import no_grad


def clip_grad_norm_(parameters, max_norm):
    """Scale all gradients in place so that their joint L2 norm is at most max_norm; return the norm before."""
    grads = [p.grad.data for p in parameters if p.grad is not None]
    if not grads:
        return 0.0
    with no_grad():
        total = math.sqrt(sum(float((g * g).sum()) for g in grads))
    scale = max_norm / (total + 1e-6)  # the 1e-6 (as in PyTorch) keeps a zero norm from dividing by zero
    if scale < 1.0:
        for g in grads:
            g *= scale
    return total
