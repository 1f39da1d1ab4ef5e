"""create_graph=True: an op's backward run on the graph's Tensors, so that the gradient it returns is itself recorded.

One mechanism, the same for every op: for the length of the call, `op.saved` holds Tensors in place of the float
arrays that forward saved. Each was an input of the op or its output (a reference op saves nothing else that carries
a gradient), so each is found by identity among the arrays of the op's graph neighbours and becomes a Tensor on that
node: the output's array a Tensor made by op, an input's a Tensor made by its parent node (a leaf is itself). Masks,
indices and constants stay as they are. A kernel (function.py) is replaced by its reference op, replayed on the same
inputs, since a kernel saves what suits its device. What forward kept for speed (`op.kept`) is dropped: a float
array, it would cut the second-order terms, so backward computes it again from the Tensors. Backward passes written
with operators and `minitorch.ops.array_ops` run on arrays and Tensors alike.
"""
import numpy as np

from .. import backend
from .function import Function
from .value import Value

HINT = ("to be differentiated twice, a backward is written with operators, Tensor methods and minitorch.ops.array_ops "
        "(exp, log, sigmoid, tanh, erf, where, ...), which take an array or a Tensor, not NumPy functions")


def _as_graph_value(i, value, op, node, new):
    """A saved value as backward sees it under create_graph (see the module's docstring); node is the graph node of
    op's output (op itself, or the kernel op that a replayed reference op stands for)."""
    if not (backend.is_array(value) or isinstance(value, np.generic)) or value.dtype.kind not in "fc":
        return value
    if value is op.data:
        return _on_node(new(value, True), node)
    for parent, needs_grad in zip(op.parents, op.needs_input_grad):
        if value is _array_of(parent):
            return (parent if isinstance(parent, Value) else _on_node(new(value, True), parent)) if needs_grad \
                else value   # an input without a gradient is a constant here
    raise RuntimeError(f"{type(op).__name__}: create_graph=True cannot differentiate its backward: save_for_backward's "
                       f"value {i} is a float array computed from its inputs; save the inputs (or the output) and "
                       f"compute it again in backward")


def _array_of(parent):
    """The array of an op's input: a graph node's or a Tensor's data; a plain input (a number, an array) as it is."""
    return parent.data if isinstance(parent, (Value, Function)) else parent


def _on_node(t, node):
    t._op = node
    return t


def _replayed(op):
    """A kernel's reference op, run again on the kernel's inputs, with the kernel's place in the graph."""
    ref = type(op).reference()
    ref.needs_input_grad, ref.parents, ref.options = op.needs_input_grad, op.parents, op.options
    ref.data = ref.forward(*[_array_of(p) for p in op.parents], **op.options)
    return ref


def backward_recorded(op, g, new):
    """op's gradients as Tensors recorded in the graph (create_graph=True). g is a Tensor; new(array, requires_grad)
    makes a Tensor."""
    name, node = type(op).__name__, op
    if type(op).reference is not None:
        op = _replayed(op)
    op.kept = None
    arrays = op.saved
    op.saved = tuple(_as_graph_value(i, v, op, node, new) for i, v in enumerate(arrays))
    try:
        input_grads = op.backward(g)
    except Exception as e:  # e.g. a NumPy function handed a Tensor
        raise RuntimeError(f"{name}: create_graph=True: its backward failed on Tensors ({type(e).__name__}: {e}); "
                           f"{HINT}") from e
    finally:
        op.saved = arrays
    for pg in input_grads if isinstance(input_grads, tuple) else (input_grads,):
        if backend.is_array(pg) or isinstance(pg, np.generic):
            raise RuntimeError(f"{name}: create_graph=True: its backward returned an array, which would cut the "
                               f"gradient from the graph; {HINT}")
    return input_grads
