"""strict_shapes(): the grader's check that a student's backward sums its gradients over broadcast dims itself.

The engine undoes broadcasting for every op in one place (core/backward.unbroadcast); inside this block an op's
backward that returns a gradient not shaped like its input raises instead, naming the op, the input and both shapes.
It reaches the walk through the engine's one extension point, `core.op_hook` (per thread, as grad mode is).
"""
import contextlib

import numpy as np

from ...core import op_hook
from .diagnose import transposed


def _checked(op, phase, args, options):
    """op's forward or backward, run as the engine would; a backward's gradients checked against the inputs' shapes."""
    if phase == "forward":
        return op.forward(*args, **options)
    return check_shapes(op, op.backward(*args))


def check_shapes(op, grads):
    """grads (what op's backward returned), after raising if one is not shaped like its input."""
    for i, (grad, parent, needs_grad) in enumerate(zip(grads if isinstance(grads, tuple) else (grads,), op.parents,
                                                       op.needs_input_grad)):
        if grad is not None and needs_grad and parent.out_shape is not None and tuple(grad.shape) != tuple(
                parent.out_shape):   # (None: an op's several outputs' gradients, gathered)
            _refuse(op, i, tuple(grad.shape), tuple(parent.out_shape))
    return grads


def _refuse(op, i, got, want):
    """Raise for gradient i of op: a missing sum over broadcast dims, or another shape."""
    try:
        broadcast = np.broadcast_shapes(want, got) == got
    except ValueError:
        broadcast = False
    if transposed(got, want):
        why = "it is shaped like the input transposed"   # (which transpose is wrong: the derivation's diagnosis)
    else:
        why = ("sum it over the broadcast axes (keepdims, then reshape) to the input's shape" if broadcast
               else "it must have the input's shape")
    raise RuntimeError(f"strict shapes: {type(op).__name__}.backward returned a gradient of shape {got} for input "
                       f"{i} of shape {want}: {why}")


@contextlib.contextmanager
def strict_shapes():
    """Inside this block (in this thread) a backward whose gradient is not shaped like its input raises."""
    with op_hook(_checked):
        yield


__all__ = ["strict_shapes", "check_shapes"]
