"""The tiny engine: micrograd's idea on NumPy arrays, in a page, as minitorch's Tensor works in minitorch/core.

A Value holds an array (data), the Values it was computed from (parents: one entry per operand, so x * x lists x
twice) and backward_fn, which turns the gradient reaching the Value into one gradient per parent: the local
derivatives of its op, applied. Each op below is its forward and its backward_fn side by side. Nothing here walks the
graph: the walk (the order, then the chain rule) is what the exercises topo_sort and backward have you write;
reference.py holds the engine's answers, to read once your checks pass. Used with them, it is a whole engine:

    >>> import numpy as np
    >>> from minitorch.tools.exercises.harness import Value
    >>> from minitorch.tools.exercises.reference import backward, topological_order
    >>> x = Value(np.array([0.5, -1.0]), name="x")
    >>> y = (x * x + x).tanh()
    >>> [v.name for v in topological_order(y)]              # the root first, each Value before its parents
    ['tanh(((x * x) + x))', '((x * x) + x)', '(x * x)', 'x']
    >>> y.grad = np.ones(2)                                  # dL/dy for L = sum(y)
    >>> backward(topological_order(y))
    >>> x.grad                                               # (1 - y^2)(2x + 1): x's three paths added up
    array([ 1.19317162, -1.        ])

no_grad (the fourth engine exercise) switches recording off through `state`. The exercises' checks build the same
random graph here and with minitorch's Tensors and compare the two (engine_checks.py).
"""
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
