"""The engine's switches, per thread as in PyTorch: grad mode, anomaly mode, kernels on or off, and the op hook of
the profiler."""
import contextlib
import threading

import numpy as np


class _State(threading.local):
    """Each thread starts with these class defaults and sets its own values."""
    grad_enabled = True
    anomaly = False     # detect_anomaly(): record each forward's stack, check each backward's result
    op_hook = None      # see op_hook()
    kernels = True      # False inside function.reference_ops(): every op runs its own (reference) code
    strict_shapes = False  # see strict_shapes(): the walk raises instead of undoing broadcasting


state = _State()


def is_grad_enabled():
    """True unless inside no_grad() (in this thread)."""
    return state.grad_enabled


@contextlib.contextmanager
def no_grad():
    """Inside this block ops record no graph (inference, optimizer updates)."""
    previous = state.grad_enabled
    state.grad_enabled = False
    try:
        yield
    finally:
        state.grad_enabled = previous


@contextlib.contextmanager
def enable_grad():
    """Inside this block ops record a graph again, even within no_grad()."""
    previous = state.grad_enabled
    state.grad_enabled = True
    try:
        yield
    finally:
        state.grad_enabled = previous


@contextlib.contextmanager
def op_hook(hook):
    """Inside the block every op's forward and backward run by this thread (on arrays; not the create_graph walk)
    goes through hook(op, "forward" | "backward", args, options), which calls op.forward(*args, **options) or
    op.backward(*args) itself and may time it or look at its arguments (minitorch.tools.profiler). One hook at a
    time."""
    if state.op_hook is not None:
        raise RuntimeError("op_hook: another hook is active (one at a time)")
    state.op_hook = hook
    try:
        yield
    finally:
        state.op_hook = None


@contextlib.contextmanager
def strict_shapes():
    """Inside this block the backward walk (in this thread) does not sum a gradient back over broadcast dims: an op
    whose backward returns a gradient not shaped like its input raises, naming the op, the input and both shapes.
    The exercises' grader turns it on, so that a student writes the sum over broadcast axes themselves."""
    previous = state.strict_shapes
    state.strict_shapes = True
    try:
        yield
    finally:
        state.strict_shapes = previous


def refuse_shape(op, grad, parent):
    """Under strict_shapes(): raise for gradient i of op, not shaped like its input (the backward walk calls this
    only on a mismatch, so the usual walk reads one attribute): a missing sum over broadcast dims, or another
    shape."""
    got, want = tuple(grad.shape), tuple(parent.data.shape)
    i = next(k for k, p in enumerate(op.parents) if p is parent)
    try:
        broadcast = np.broadcast_shapes(want, got) == got
    except ValueError:
        broadcast = False
    why = ("sum it over the broadcast axes (keepdims, then reshape) to the input's shape" if broadcast
           else "it must have the input's shape")
    raise RuntimeError(f"strict shapes: {type(op).__name__}.backward returned a gradient of shape {got} for input "
                       f"{i} of shape {want}: {why}")
