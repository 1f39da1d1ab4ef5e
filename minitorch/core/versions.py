"""In-place safety, as in PyTorch: every Tensor has a version counter that in-place changes bump, and an op checks at
backward that the inputs and output it declared with save_for_backward are at the versions its forward saw.

A counter may be shared: a view shares its base's (function.View, `share`), and `detach()` shares its source's.
Writes through `.data` are not counted: they are the escape hatch for code that knows what it does (initialisation,
loading a state).

Everything the check reads is kept here, not spread over the graph's nodes: a recorded op keeps one `seen` (what its
forward saw: IDS, COUNTER, VERSION below), `superseded` holds the ops whose output an in-place op in the graph replaced,
and one clock orders the recorded ops (an op's `seq`) and the in-place changes, so that the walk checks an op only when
a change came after its forward (`last_change`); in a training step none does.
"""
import collections
import itertools
import weakref

import numpy as np

from . import anomaly_mode
from .value import Value

CLOCK = itertools.count()   # each recorded op's seq (Function.apply) and each in-place change's time (bump)
last_change = -1            # the time of the latest in-place change
LOG = 16   # in-place changes a counter remembers: a check finds the version an op saw if fewer came after it
superseded = weakref.WeakSet()   # ops whose output an in-place op in the graph replaced (write_in_place)


class VersionCounter:
    """How many in-place changes the memory of the tensors that hold this counter has seen, and when the latest
    ones happened (for backward's check, version_at)."""
    value = 0   # class defaults, and no __init__: every op makes one, so making one runs no Python
    log = ()    # (time, the version before it) for each of its LOG latest in-place changes, oldest first


# What a recorded op saw at its forward, its `seen`: a plain tuple (one is made for every op: a class to call would
# cost more than the rest of the recording), (ids, counter, version): the ids of its input arrays and then its output
# arrays when it saved something, else () (for `roles`); its output's version counter (a list of them for several
# outputs; a Constant's: its tensor's); the version its output is at (0 for a new output).
IDS, COUNTER, VERSION = range(3)


def bump(tensors):
    """Count one in-place change of each tensor's memory (and of every tensor that shares its version counter), all
    at one time of the clock."""
    global last_change
    last_change = next(CLOCK)
    for t in tensors:
        counter = t._version_counter
        if not counter.log:
            counter.log = collections.deque(maxlen=LOG)
        counter.log.append((last_change, counter.value))
        counter.value += 1


def version_at(counter, seq):
    """The version `counter` had when the op recorded at time `seq` ran, if it changed since (else None), as a
    string: "v", or "at most v" when more changes came since than the log remembers."""
    for i, (time, version) in enumerate(counter.log):
        if time > seq:
            return f"at most {version}" if i == 0 and len(counter.log) == LOG else str(version)
    return None


def increment_version(tensors):
    """Mark a Tensor (or each Tensor of an iterable) as changed in place (torch.autograd.graph.increment_version):
    for code that writes into `.data` on purpose, such as an optimizer's update."""
    bump((tensors,) if isinstance(tensors, Value) else tensors)


def buffer(array):
    """The array that owns the memory behind a view (NumPy and CuPy arrays and NumPy scalars have a .base)."""
    base = array.base
    while base is not None and hasattr(base, "base"):   # (a view of a bytes object stops there)
        array, base = base, base.base
    return array


def roles(op, views=False):
    """What each value op saved is: its position among op's inputs and then outputs (as in op.seen[IDS]), or None (a
    mask, an index, None). A saved value is alive, so its id is its own.
    views=True: a saved view of an input or output (x.T) counts as that one too (its memory changes with it)."""
    where = {i: j for j, i in reversed(list(enumerate(op.seen[IDS])))}   # (x * x: input 0)
    return [None if v is None else where.get(id(v), where.get(id(getattr(v, "base", None))) if views else None)
            for v in op.saved_tensors]


def which(op, j):
    """Position j of roles(op) in words: "input 1", "the output", "output 0"."""
    n_in = len(op.needs_input_grad)
    return f"input {j}" if j < n_in else "the output" if type(op.out_shape) is not list else f"output {j - n_in}"


def counter_of(op, j):
    """The version counter of op's input or output j (roles' numbering): an input's from its graph node (an op's
    seen, a leaf's own, a Constant's), an output's from op's seen; None for an array or a number."""
    n_in = len(op.needs_input_grad)
    if j >= n_in:
        return op.seen[COUNTER] if type(op.out_shape) is not list else op.seen[COUNTER][j - n_in]
    node = op.parents[j]
    return None if node is None else node._version_counter if isinstance(node, Value) else node.seen[COUNTER]


def share(view, base):
    """view, a view of base's memory, takes base's version counter (an in-place change through either is seen by
    both), and its op, if any, notes it."""
    view._version_counter = counter = base._version_counter
    if view._op is not None:
        view._op.seen = (view._op.seen[IDS], counter, counter.value)


def check(op):
    """Raise if op cannot backward: it made a view of a tensor changed in place since (refuse_stale_view), or a tensor
    it saved was changed in place since its forward (PyTorch's error). The walk calls this only when some tensor was
    changed in place after op's forward (`last_change`): a tensor that was changed but not saved (the input of an Add)
    needs no error."""
    if op.parents and op.parents[0] in superseded and op.seen[COUNTER] is counter_of(op, 0):   # op made a view
        refuse_stale_view(op)
    n_in = len(op.needs_input_grad)
    for v, j in zip(op.saved_tensors, roles(op, views=True)):
        counter = None if j is None else counter_of(op, j)
        if counter is None:
            continue
        if j < n_in:   # an input: the version it had at op's forward, from the counter's log
            then = version_at(counter, op.seq)
        else:          # an output: the version op noted (write_in_place notes the one its write gave)
            then = None if counter.value == op.seen[VERSION] else str(op.seen[VERSION])
        if then is None:
            continue
        name = type(op).__name__
        raise RuntimeError(
            f"one of the variables needed for gradient computation has been modified by an inplace operation: "
            f"{which(op, j)} of {name}, a tensor of shape {tuple(v.shape)} ({v.dtype}), is at version "
            f"{counter.value}; expected version {then} instead. Hint: an optimizer step or an "
            f"in-place op (add_, mul_, zero_, copy_, ...) ran between {name}'s forward and this backward: call "
            f"backward() before optimizer.step(), or use the out-of-place op (y = y * 2, not y.mul_(2)); with "
            f"mt.autograd.detect_anomaly() the error also shows where {name}'s forward was called"
            + anomaly_mode.where(op))


def refuse_stale_view(op):
    """Raise for op, which made a view of a tensor's memory that an in-place op in the graph changed afterwards: the
    view changed with it, so the graph it was recorded in no longer gives its gradient (PyTorch rebuilds a view's
    graph; minitorch does not)."""
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
    bump((tensor,))   # an op that saved this memory before now refuses to backward
    old, op = tensor._op, result._op
    if old is not None:
        superseded.add(old)
    tensor._op, tensor.requires_grad, tensor._cut_by = op, result.requires_grad, result._cut_by
    if op is not None:   # its output is the tensor's memory now, at this version (result's can be freed)
        ids, counter = op.seen[IDS], tensor._version_counter
        if ids:
            op.saved_tensors = tuple(tensor.data if j == len(ids) - 1 else v
                                     for v, j in zip(op.saved_tensors, roles(op)))
            ids = [*ids[:-1], id(tensor.data)]
        op.seen = (ids, counter, counter.value)   # (its inputs keep their forward's time, op.seq)


def same_buffer(result, array):
    """True when the array `result` is a view of the memory of `array` (a NumPy or CuPy array)."""
    base = result.base
    if base is None:
        return False
    if base is array or (base is array.base and base is not None):   # the usual case: a view of the input or of its
        return True                                                    # base, known without walking the chain
    return buffer(result) is buffer(array)
