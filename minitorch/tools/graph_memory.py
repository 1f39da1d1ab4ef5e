"""How many bytes a graph keeps alive for its backward pass: the arrays its Functions saved.

Each Function instance (a tensor's `_op`, its node in the graph) declares what its backward reads with
`save_for_backward`, kept as `op.saved_tensors`, and may keep intermediates for speed in `op.kept`; a node holds no
array (not its output, not an input that needs no gradient: core/function.py), so this is what the graph holds
(tests/engine/test_graph_memory.py checks it against tracemalloc). `saved_bytes` walks the graph from an output and
sums the sizes of those arrays, counting each underlying buffer once: a view (a transpose, a reshape, a slice) keeps
its whole base buffer alive, so it counts as that base. An input counts only where an op saved it.
"""
from .. import backend
from ..core import Function
from ..core.versions import buffer as _buffer


def _saved_arrays(op):
    """The arrays an op declared with save_for_backward and those it kept (None and Python values skipped)."""
    return [value for value in (*getattr(op, "saved_tensors", ()), *getattr(op, "kept", ())) if backend.is_array(value)]


def op_saved_bytes(op):
    """Bytes of the distinct buffers that one Function saved or kept for its backward."""
    return sum({id(b): b.nbytes for b in map(_buffer, _saved_arrays(op))}.values())


def saved_bytes(output, exclude=()):
    """Bytes of the distinct buffers saved for backward by every Function in the graph that produced `output`;
    buffers of the tensors in `exclude` (the parameters, say, which exist anyway) are not counted."""
    excluded = {id(_buffer(t.data)) for t in exclude}
    buffers, seen_ops, stack = {}, set(), [output._op]
    while stack:
        op = stack.pop()
        if op is None or id(op) in seen_ops:
            continue
        seen_ops.add(id(op))
        for array in _saved_arrays(op):
            base = _buffer(array)
            if id(base) not in excluded:
                buffers[id(base)] = base.nbytes
        stack.extend(p for p in op.parents if isinstance(p, Function))
    return sum(buffers.values())


__all__ = ["saved_bytes", "op_saved_bytes"]
