"""Node: a value in the graph. The engine (function.py, backward.py) knows values only as Nodes."""


class Node:
    """A value in the graph: an array (`data`), whether it needs a gradient, the op that made it (`_op`, None for a
    leaf) and the gradient backward left (`grad`). Tensor (tensor.py) is the Node users see."""

    # _cut_by names the non-differentiable op (argmax, a comparison, ...) that this value came through while an input
    # required grad, for backward's error; _version_counter counts in-place changes (versions.py); _hooks: id -> fn
    __slots__ = ("data", "requires_grad", "grad", "_op", "_retains_grad", "_cut_by", "_version_counter", "_hooks",
                 "__weakref__")

    def _new(self, array, requires_grad=False):
        """A new Node of the user-facing kind wrapping `array` as is (no copy): outputs and gradients."""
        raise NotImplementedError
