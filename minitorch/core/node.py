"""Node: a value in the graph. The engine (function.py, backward.py) knows values only as Nodes."""


class Node:
    """A value in the graph: an array (`data`), whether it needs a gradient, the op that made it (`_op`, None for a
    leaf) and the gradient backward left (`grad`). Tensor (tensor.py) is the Node users see."""

    # _cut_by names the non-differentiable op (argmax, a comparison, ...) that this value came through while an input
    # required grad, for backward's error; _version_counter counts in-place changes (versions.py); _hooks: id -> fn;
    # _earlier: None, or after recorded in-place ops the (seq, node) pairs of this value's earlier places in the graph
    # (as_of below)
    __slots__ = ("data", "requires_grad", "grad", "_op", "_retains_grad", "_cut_by", "_version_counter", "_hooks",
                 "_earlier", "__weakref__")

    def _new(self, array, requires_grad=False):
        """A new Node of the user-facing kind wrapping `array` as is (no copy): outputs and gradients."""
        raise NotImplementedError


def as_of(node, seq):
    """The node that held node's value when the op numbered seq was recorded: an in-place op recorded later
    (Tensor.mul_ on a tensor in the graph) moved the value it had then to an earlier node, which that op must read."""
    for changed_at, earlier in node._earlier:
        if seq < changed_at:
            return earlier
    return node

