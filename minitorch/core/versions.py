"""In-place safety, as in PyTorch: every Tensor has a version counter that in-place changes bump, and an op checks at
backward that the tensors it declared with save_for_backward are at the versions its forward saw.

A counter may be shared: a view shares its base's (Function.is_view), and `detach()` shares its source's. Writes
through `.data` are not counted: they are the escape hatch for code that knows what it does (initialisation, loading
a state).
"""
import numpy as np

from . import anomaly_mode
from .value import Value


class VersionCounter:
    """How many in-place changes the memory of the tensors that hold this counter has seen."""
    value = 0   # a class default, and no __init__: every op makes one, so making one runs no Python


def increment_version(tensors):
    """Mark a Tensor (or each Tensor of an iterable) as changed in place (torch.autograd.graph.increment_version):
    for code that writes into `.data` on purpose, such as an optimizer's update."""
    for t in (tensors,) if isinstance(tensors, Value) else tensors:
        t._version_counter.value += 1


def buffer(array):
    """The array that owns the memory behind a view (NumPy and CuPy arrays and NumPy scalars have a .base)."""
    base = array.base
    while base is not None and hasattr(base, "base"):   # (a view of a bytes object stops there)
        array, base = base, base.base
    return array


def saved_buffers(op):
    """ids of the buffers behind the arrays op declared with save_for_backward."""
    return {id(buffer(v)) for v in op.saved if hasattr(v, "shape") and hasattr(v, "dtype")}


def check(op):
    """Raise if op cannot backward: it made a view of a tensor changed in place since (refuse_stale_view), or a tensor
    whose memory it saved was changed in place since its forward (PyTorch's error).
    The walk calls this only when one of these may be so: for the last, when some version moved (op._versions,
    recorded by Function.apply, against the counters' values now); a tensor that was changed but not saved (the
    input of an Add) needs no error."""
    if op.is_view and op.parents[0]._superseded:
        refuse_stale_view(op)
    saved = saved_buffers(op)
    # the tensors' arrays, in the order of op._counters: the Tensor inputs (at their position among the op's
    # arguments, numbers included: 2 / w has w as input 1), then the output
    positions = [j for j, p in enumerate(op.parents) if isinstance(p, Value) or hasattr(p, "needs_input_grad")]
    arrays = [op.parents[j].data for j in positions] + [op.data]
    for i, (array, counter, then) in enumerate(zip(arrays, op._counters, op._versions)):
        if counter.value != then and id(buffer(array)) in saved:
            name = type(op).__name__
            which = "the output" if i == len(positions) else f"input {positions[i]}"
            raise RuntimeError(
                f"one of the variables needed for gradient computation has been modified by an inplace operation: "
                f"{which} of {name}, a tensor of shape {tuple(array.shape)} ({array.dtype}), is at version "
                f"{counter.value}; expected version {then} instead. Hint: an optimizer step or an in-place op (add_, "
                f"mul_, zero_, copy_, ...) ran between {name}'s forward and this backward: call backward() before "
                f"optimizer.step(), or use the out-of-place op (y = y * 2, not y.mul_(2)); with "
                f"mt.autograd.detect_anomaly() the error also shows where {name}'s forward was called"
                + anomaly_mode.where(op))


def refuse_stale_view(op):
    """Raise when op made a view of a tensor's memory that an in-place op in the graph changed afterwards: the view
    changed with it, so the graph it was recorded in no longer gives its gradient (PyTorch rebuilds a view's graph;
    minitorch does not)."""
    if same_buffer(op.data, op.parents[0].data):
        raise RuntimeError(f"a view made by {type(op).__name__} of a tensor that an in-place op changed afterwards is "
                           f"used in this backward: its graph is the one from before the change; make the view after "
                           f"the in-place op, or use the out-of-place form (x = x * 2, not x.mul_(2))")


def write_in_place(tensor, result):
    """An in-place op in the graph (Tensor.mul_ on a non-leaf): `result` (the op recorded out of place) is written
    into tensor's memory, so that its views see the change, and tensor takes result's graph node. The node tensor
    had stays as it was for the ops recorded before (they read the earlier value); it is marked superseded for the
    views made of it. The new node's output is the tensor's memory, at the version this change gives it."""
    if isinstance(tensor.data, np.generic):   # a NumPy scalar (a 0-d result) has no memory to write into
        tensor.data = result.data
    else:
        tensor.data[...] = result.data
    tensor._version_counter.value += 1   # an op that saved this memory before now refuses to backward
    old, op = tensor._op, result._op
    if old is not None:
        old._superseded = True
    tensor._op, tensor.requires_grad, tensor._cut_by = op, result.requires_grad, result._cut_by
    if op is not None:
        op.data = tensor.data
        if op.saved:   # (its own saved arrays are its inputs' copies: the output's entry is the tensor's now)
            op._counters[-1] = tensor._version_counter
            op._versions[-1] = tensor._version_counter.value


def same_buffer(result, array):
    """True when the array `result` is a view of the memory of `array` (a NumPy or CuPy array)."""
    base = result.base
    if base is None:
        return False
    if base is array or (base is array.base and base is not None):   # the usual case: a view of the input or of its
        return True                                                    # base, known without walking the chain
    return buffer(result) is buffer(array)
