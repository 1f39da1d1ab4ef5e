"""The engine's switches, per thread as in PyTorch: grad mode, anomaly mode, kernels on or off, and the op hook of
the profiler."""
import contextlib
import threading


class _State(threading.local):
    """Each thread starts with these class defaults and sets its own values."""
    grad_enabled = True
    anomaly = False     # detect_anomaly(): record each forward's stack, check each backward's result
    op_hook = None      # see op_hook()
    kernels = True      # False inside function.reference_ops(): every op runs its own (reference) code
    autocast = None     # the enabled mt.autocast block (amp/autocast_mode.py): it casts the ops' inputs


state = _State()


def is_grad_enabled():
    """True unless inside no_grad() (in this thread)."""
    return state.grad_enabled


@contextlib.contextmanager
def using_config(name, value):
    """Inside the block, in this thread, the engine's switch `name` (a field of `state`) is `value`; the value it had
    is restored afterwards, in a `finally` (DeZero's using_config). Every mode switch is one: no_grad, enable_grad,
    reference_ops, detect_anomaly, op_hook."""
    previous = getattr(state, name)
    setattr(state, name, value)
    try:
        yield
    finally:
        setattr(state, name, previous)


def no_grad():
    """Inside this block ops record no graph (inference, optimizer updates); also a decorator, @no_grad()."""
    return using_config("grad_enabled", False)


def enable_grad():
    """Inside this block ops record a graph again, even within no_grad()."""
    return using_config("grad_enabled", True)


def op_hook(hook):
    """Inside the block every op's forward and backward run by this thread (on arrays; not the create_graph walk)
    goes through hook(op, "forward" | "backward", args, options), which calls op.forward(*args, **options) or
    op.backward(*args) itself and may time it or look at its arguments. The engine's one extension point: the
    profiler (minitorch.tools.profiler) and the exercises' strict shapes (minitorch.tools.exercises.strict_shapes)
    reach the walk through it. One hook at a time."""
    if state.op_hook is not None:
        raise RuntimeError("op_hook: another hook is active (one at a time)")
    return using_config("op_hook", hook)
