"""detect_anomaly(): find the op whose backward produced a nan or an inf, and where its forward was called.

Outside the context the engine pays one flag test per op; inside, each recorded op keeps the stack of its forward
call and each backward's gradients are checked (a read from the device per op: a debugging tool, not for training).
"""
import os
import traceback

import numpy as np

from .. import backend
from .grad_mode import state, using_config

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # minitorch/


def detect_anomaly(check_nan=True):
    """Inside the block a backward that produces nan or inf raises an error naming the op and showing the stack of
    its forward call (torch.autograd.detect_anomaly); check_nan=False only records the stacks (for other errors)."""
    return using_config("anomaly", "check" if check_nan else "record")


def is_anomaly_enabled():
    return bool(state.anomaly)


def record_stack(op):
    """Keep on op the caller's frames of its forward call, minitorch's own frames left out."""
    frames = [f for f in traceback.extract_stack() if not os.path.abspath(f.filename).startswith(_PACKAGE + os.sep)]
    op._forward_stack = "".join(traceback.format_list(frames[-8:]))


def where(op):
    """A sentence with the stack of op's forward call, or "" when it was not recorded."""
    stack = getattr(op, "_forward_stack", None)
    return f"\nTraceback of the forward call of {type(op).__name__}:\n{stack}" if stack else ""


def check_gradients(op, grads):
    """Raise if a gradient that op's backward returned holds nan or inf (arrays or Tensors)."""
    if state.anomaly != "check":
        return
    for i, g in enumerate(grads):
        array = g.data if hasattr(g, "_version_counter") else g   # a Tensor under create_graph, else an array
        if g is None or not hasattr(array, "dtype") or array.dtype.kind not in "fc":
            continue
        xp = backend.xp_of(array) if backend.is_array(array) else np
        if not backend.to_numpy(xp.isfinite(array).all()):
            kind = "nan" if backend.to_numpy(xp.isnan(array).any()) else "inf"
            raise RuntimeError(f"Function {type(op).__name__} returned {kind} values in its gradient for input {i} "
                               f"(shape {tuple(array.shape)}).{where(op)}")
