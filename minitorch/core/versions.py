"""In-place safety, as in PyTorch: every Tensor has a version counter that in-place changes bump, and an op checks at
backward that the tensors it declared with save_for_backward are at the versions its forward saw.

A counter may be shared: a view shares its base's (Function.is_view), and `detach()` shares its source's. Writes
through `.data` are not counted: they are the escape hatch for code that knows what it does (initialisation, loading
a state).
"""
from . import anomaly_mode
from .node import Node


class VersionCounter:
    """How many in-place changes the memory of the tensors that hold this counter has seen."""
    value = 0   # a class default, and no __init__: every op makes one, so making one runs no Python


def increment_version(tensors):
    """Mark a Tensor (or each Tensor of an iterable) as changed in place (torch.autograd.graph.increment_version):
    for code that writes into `.data` on purpose, such as an optimizer's update."""
    for t in (tensors,) if isinstance(tensors, Node) else tensors:
        t._version_counter.value += 1


def record(tensors, out):
    """The versions an op's forward saw: of its input Tensors, then of its output."""
    return [*[t._version_counter.value for t in tensors], out._version_counter.value]


def buffer(array):
    """The array that owns the memory behind a view (NumPy and CuPy arrays and NumPy scalars have a .base)."""
    base = array.base
    while base is not None and hasattr(base, "base"):   # (a view of a bytes object stops there)
        array, base = base, base.base
    return array


def saved_buffers(op):
    """ids of the buffers behind the arrays op declared with save_for_backward."""
    return {id(buffer(v)) for v in op.saved if hasattr(v, "shape") and hasattr(v, "dtype")}


def check(op, tensors, out):
    """Raise PyTorch's error if a tensor whose memory `op` saved for backward was changed in place since its forward.
    Called only when some version moved (the fast path compares two lists); a tensor that was changed but not
    saved (the input of an Add) needs no error."""
    saved = saved_buffers(op)
    now = record(tensors, out)
    # the position among the op's arguments, numbers included (2 / w: w is input 1)
    positions = [j for j, p in enumerate(op.parents) if isinstance(p, Node)]
    for i, (t, then, version) in enumerate(zip([*tensors, out], op._saved_versions, now)):
        if version != then and id(buffer(t.data)) in saved:
            name = type(op).__name__
            which = "the output" if i == len(tensors) else f"input {positions[i]}"
            raise RuntimeError(
                f"one of the variables needed for gradient computation has been modified by an inplace operation: "
                f"{which} of {name}, a tensor of shape {t.shape} ({t.dtype}), is at version {version}; "
                f"expected version {then} instead. Hint: an optimizer step or an in-place op (add_, mul_, zero_, "
                f"copy_, ...) ran between {name}'s forward and this backward: call backward() before "
                f"optimizer.step(), or use the out-of-place op (y = y * 2, not y.mul_(2)); with "
                f"mt.autograd.detect_anomaly() the error also shows where {name}'s forward was called"
                + anomaly_mode.where(op))


def same_buffer(result, array):
    """True when the array `result` is a view of the memory of `array` (a NumPy or CuPy array)."""
    base = result.base
    if base is None:
        return False
    if base is array or (base is array.base and base is not None):   # the usual case: a view of the input or of its
        return True                                                    # base, known without walking the chain
    return buffer(result) is buffer(array)
