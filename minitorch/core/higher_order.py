"""create_graph=True: an op's backward run on the graph's Tensors, so that the gradient it returns is itself recorded.

One mechanism, the same for every op: for the length of the call, `op.saved_tensors` holds Tensors in place of the float
arrays that forward saved. Each was an input of the op or its output (a reference op saves nothing else that carries a
gradient), as `versions.roles` tells from what Function.apply noted (`op.seen`), and becomes a Tensor on that node: the
output's array a Tensor made by op, an input's a Tensor made by its parent node (a leaf is itself). Masks, indices and
constants stay as they are. A kernel (function.py) saves what its reference op saves, so the reference's backward runs
on the kernel's node. What forward kept for speed (`op.kept`) is set aside for the call: a float array, it would cut the
second-order terms, so backward computes it again from the Tensors. Backward passes written with operators and
`minitorch.ops.array_ops` run on arrays and Tensors alike.
"""
import numpy as np

from .. import backend
from .value import Value
from .function import Output, reference_of
from .versions import roles

HINT = ("to be differentiated twice, a backward is written with operators, Tensor methods and minitorch.ops.array_ops "
        "(exp, log, sigmoid, tanh, erf, where, ...), which take an array or a Tensor, not NumPy functions")


def _as_graph_value(i, value, role, op, new):
    """A saved value as backward sees it under create_graph (see the module's docstring); role: versions.roles'."""
    if not (backend.is_array(value) or isinstance(value, np.generic)) or value.dtype.kind not in "fc":
        return value
    n_in = len(op.needs_input_grad)
    if role is not None and role >= n_in:   # an output: op's node, or the Output node of one of several
        return _on_node(new(value, True), op if type(op.out_shape) is not list else Output.of(op, role - n_in))
    if role is not None:
        parent = op.parents[role]
        if not op.needs_input_grad[role]:   # an input without a gradient is a constant here
            return value
        return parent if isinstance(parent, Value) else _on_node(new(value, True), parent)
    raise SavedIntermediateError(
        f"{type(op).__name__}: create_graph=True cannot differentiate its backward: save_for_backward's value {i} is a "
        f"float array computed from its inputs; save the inputs (or the output) and compute it again in backward")


class SavedIntermediateError(RuntimeError):
    """A backward to differentiate reads an array forward computed: PyTorch would take it as a constant and give a
    wrong second derivative without a word; minitorch refuses."""


def _on_node(t, node):
    t._op = node
    return t


def backward_recorded(op, grads_out, new):
    """op's gradients as Tensors recorded in the graph (create_graph=True). grads_out: Tensors, one per output of op;
    new(array, requires_grad) makes a Tensor."""
    name = type(op).__name__
    backward = reference_of(type(op)).backward   # a kernel: its reference's formulas, on what it saved
    arrays, kept, op.kept = op.saved_tensors, op.kept, ()
    what = roles(op)   # (a saved view of an input, x.T, is no input here: computed from it, it is refused)
    op.saved_tensors = tuple(_as_graph_value(i, v, role, op, new) for i, (v, role) in enumerate(zip(arrays, what)))
    try:
        input_grads = backward(op, *grads_out)
    except Exception as e:  # e.g. a NumPy function handed a Tensor
        raise RuntimeError(f"{name}: create_graph=True: its backward failed on Tensors ({type(e).__name__}: {e}); "
                           f"{HINT}") from e
    finally:
        op.saved_tensors, op.kept = arrays, kept
    for pg in input_grads if isinstance(input_grads, tuple) else (input_grads,):
        if backend.is_array(pg) or isinstance(pg, np.generic):
            raise RuntimeError(f"{name}: create_graph=True: its backward returned an array, which would cut the "
                               f"gradient from the graph; {HINT}")
    return input_grads
