"""Reference solutions of the exercises on the engine itself (the tests grade them; `check --solution` too), written
on the tiny engine's Values. The walk is micrograd's depth-first topological order; the engine's (core/backward.py)
gives the same guarantee, each node after every node that uses it, by sorting the reached nodes by when they were
recorded."""
import contextlib

import numpy as np

from .harness import state


def topological_order(root):
    """Every Value reachable from root once, each before the Values it was computed from (root first)."""
    order, visited = [], set()

    def visit(node):
        if id(node) in visited:
            return
        visited.add(id(node))
        for parent in node.parents:
            visit(parent)
        order.append(node)   # after everything it was computed from

    visit(root)
    return order[::-1]


def backward(order):
    """order: topological_order(root), whose root's .grad is set; fill in .grad of every Value, adding up the
    gradients that reach a Value from several uses."""
    for node in order:
        if node.grad is None or node.backward_fn is None:
            continue
        for parent, g in zip(node.parents, node.backward_fn(node.grad)):
            parent.grad = g if parent.grad is None else parent.grad + g   # a new array: g may be shared


def unbroadcast(grad, shape):
    """Sum grad over the axes that broadcasting added (leading) or stretched (size 1 in shape), to `shape`."""
    extra = grad.ndim - len(shape)
    grad = grad.sum(axis=tuple(range(extra)))
    stretched = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    return grad.sum(axis=stretched, keepdims=True) if stretched else grad


@contextlib.contextmanager
def no_grad():
    """Ops inside the block record no graph; the mode before it comes back on the way out, even on an exception."""
    previous = state.grad_enabled
    state.grad_enabled = False
    try:
        yield
    finally:
        state.grad_enabled = previous


__all__ = ["topological_order", "backward", "unbroadcast", "no_grad", "np"]
