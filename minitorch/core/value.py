"""Value: what the engine knows of a Tensor (tensor.py extends it), so that the core never names the Tensor class."""


class Value:
    """An array (`data`) with `requires_grad`, the gradient backward left (`grad`) and `_op`, the Function that made
    its current value (None for a leaf). The graph itself is made of Functions: an op's `parents` are the graph nodes
    of its inputs, each the input's `_op`, or the input itself for a leaf (function.py). As a graph node, a Value has
    `out_shape` and `out_dtype` (its data's; Tensor defines them), as a recorded op has its output's."""

    # _cut_by names the non-differentiable op (argmax, a comparison, ...) that this value came through while an input
    # required grad, for backward's error; _version_counter counts in-place changes (versions.py); _hooks: id -> fn
    # (a leaf's own; a non-leaf's live on its _op, the graph node they belong to)
    __slots__ = ("data", "requires_grad", "grad", "_op", "_cut_by", "_version_counter", "_hooks", "__weakref__")

    seq = -1              # as a graph node, made before every op (Function.seq): the walk reaches it last

    def _new(self, array, requires_grad=False):
        """A new Value of the user-facing kind wrapping `array` as is (no copy): outputs and gradients."""
        raise NotImplementedError
