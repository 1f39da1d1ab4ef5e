"""The ops of a graph, for tests that look at what was recorded: the graph's nodes are ops (Functions) and leaves."""
from minitorch.core import Function


def ops_of(out):
    """Every op (Function instance) in the graph behind the Tensor out, each once, nearest first."""
    seen, stack, found = set(), [out._op], []
    while stack:
        op = stack.pop()
        if not isinstance(op, Function) or id(op) in seen:   # a leaf (a Tensor), a constant, or None
            continue
        seen.add(id(op))
        found.append(op)
        stack.extend(op.parents)
    return found
