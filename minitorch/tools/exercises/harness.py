"""A tiny engine for the exercises on the engine itself (topo_sort, backward, no_grad): a Value holds an array, the
Values it was computed from and how to send its gradient back to them, as a Tensor does in minitorch/core, in a
page. The checks build the same random graph here and with the engine's Tensors and compare the two."""
import threading

import numpy as np


class _State(threading.local):
    grad_enabled = True   # False inside no_grad(): ops record no parents and no backward


state = _State()


class Value:
    """An array in the tiny engine. parents: the Values it was computed from (one entry per operand, so x * x has x
    twice); backward_fn(g) returns one gradient per parent, each shaped like that parent; grad: dL/d(this), set by
    backward."""

    def __init__(self, data, parents=(), backward_fn=None, name=""):
        self.data = np.asarray(data, dtype=np.float64)
        self.parents, self.backward_fn, self.grad, self.name = tuple(parents), backward_fn, None, name

    def __repr__(self):
        return f"Value {self.name}" if self.name else f"Value({self.data.tolist()})"

    def _op(self, data, parents, backward_fn, name):
        if not state.grad_enabled:  # as the engine under no_grad: a result with no history
            return Value(data, name=name)
        return Value(data, parents, backward_fn, name)

    def __add__(self, other):
        return self._op(self.data + other.data, (self, other), lambda g: (g, g), f"({self.name} + {other.name})")

    def __mul__(self, other):
        return self._op(self.data * other.data, (self, other), lambda g: (g * other.data, g * self.data),
                        f"({self.name} * {other.name})")

    def tanh(self):
        y = np.tanh(self.data)
        return self._op(y, (self,), lambda g: (g * (1 - y * y),), f"tanh({self.name})")


def build(program, leaves, make_leaf):
    """The graph of `program` (a list of (op, i, j) on earlier nodes, indices into the list of nodes so far) on the
    leaves' arrays, with make_leaf(array, name) making each leaf: Values or the engine's Tensors alike."""
    nodes = [make_leaf(a, f"x{k}") for k, a in enumerate(leaves)]
    for op, i, j in program:
        a, b = nodes[i], nodes[j]
        nodes.append(a + b if op == "add" else a * b if op == "mul" else a.tanh())
        if isinstance(nodes[-1], Value):
            nodes[-1].name = f"n{len(nodes) - 1}"
    return nodes
