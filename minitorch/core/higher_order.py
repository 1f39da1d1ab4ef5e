"""create_graph=True: an op's backward run on the graph's Tensors, so that the gradient it returns is itself recorded.

The engine calls the op's own backward on a copy of the op whose saved inputs and output (what save_for_backward
declared) are the graph's Tensors. A kernel (function.py) is replaced by its reference op, replayed on the same
inputs, since a kernel saves what suits its device. Backward passes written with operators and
`minitorch.ops.array_ops` run on arrays and Tensors alike.
"""
import copy

import numpy as np

from .. import backend
from .node import Node, as_of

HINT = ("to be differentiated twice, a backward is written with operators, Tensor methods and minitorch.ops.array_ops "
        "(exp, log, sigmoid, tanh, erf, where, ...), which take an array or a Tensor, not NumPy functions")


def _twin(op, node):
    """A copy of op whose saved inputs and output are the graph's Tensors instead of their arrays (create_graph).
    A kernel is replaced by its reference op, replayed on the same inputs: kernels save what suits their device."""
    # (a plain array input stays; an input changed in place since is the value op read: node.as_of)
    tensors = {id(p.data) if isinstance(p, Node) else id(p): as_of(p, op.seq) if isinstance(p, Node) and p._earlier
               else p for p in op.parents}
    reference = type(op).reference
    if reference is None:
        twin = copy.copy(op)
        tensors[id(node.data)] = node
    else:
        twin = reference()
        twin.needs_input_grad, twin.parents, twin.options = op.needs_input_grad, op.parents, op.options
        out = twin.forward(*[p.data if isinstance(p, Node) else p for p in op.parents], **op.options)
        tensors[id(out)] = node
    twin.saved = tuple(_as_graph_value(v, tensors, type(twin).__name__, i) for i, v in enumerate(twin.saved))
    return twin


def _as_graph_value(value, tensors, name, i):
    """A saved value under create_graph: a float input's or the output's array becomes its Tensor; masks, indices
    and other values without a gradient stay as they are."""
    if not (backend.is_array(value) or isinstance(value, np.generic)) or value.dtype.kind not in "fc":
        return value
    found = tensors.get(id(value))
    if found is None:
        raise RuntimeError(f"{name}: create_graph=True cannot differentiate its backward: save_for_backward's value "
                           f"{i} is a float array computed from its inputs; save the inputs (or the output) and "
                           f"compute it again in backward")
    return found


def backward_recorded(op, node, g):
    """op's gradients as Tensors recorded in the graph (create_graph=True). g is a Tensor; node is op's output."""
    name = type(op).__name__
    twin = _twin(op, node)
    try:
        input_grads = twin.backward(g)
    except Exception as e:  # e.g. a NumPy function handed a Tensor
        raise RuntimeError(f"{name}: create_graph=True: its backward failed on Tensors ({type(e).__name__}: {e}); "
                           f"{HINT}") from e
    for pg in input_grads if isinstance(input_grads, tuple) else (input_grads,):
        if backend.is_array(pg) or isinstance(pg, np.generic):
            raise RuntimeError(f"{name}: create_graph=True: its backward returned an array, which would cut the "
                               f"gradient from the graph; {HINT}")
    return input_grads
