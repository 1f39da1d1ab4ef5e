"""mul: d(ab) = b da + a db, each summed back over the dims its input was broadcast along."""
import numpy as np

from minitorch.autograd import Function
from minitorch.tools.exercises.mutation import factor, pick

WORDS = {
    "b in da": "dL/da's factor b (d(ab)/da = b)",
    "a in db": "dL/db's factor a (d(ab)/db = a)",
    ("operands", "swapped"): "each gradient is multiplied by its own input, not the other: your dL/da is the right "
                             "dL/db: the two gradients are swapped (da = g * b, db = g * a)",
    ("da operand", "own"): "dL/da is g * a: the factor is on the wrong operand (d(ab)/da = b, the other input)",
    ("db operand", "own"): "dL/db is g * b: the factor is on the wrong operand (d(ab)/db = a, the other input)",
    ("da output", "out"): "dL/da is g * (a * b): the factor is the output instead of the other input b",
    ("sum a", "kept"): "dL/da is not summed back over the dims a was broadcast along",
    ("sum b", "kept"): "dL/db is not summed back over the dims b was broadcast along",
    ("sum b", "everything"): "dL/db is summed over every axis, to one number spread over b's shape: it is summed back "
                             "over the dims b was broadcast along, each element of b its own sum",
    ("sum b", "mean"): "dL/db is averaged over the dims b was broadcast along: sum, do not average",
}


def _summed_to(grad, shape):
    """grad summed over the axes broadcasting added (leading) or stretched (size 1 in shape)."""
    grad = grad.sum(axis=tuple(range(grad.ndim - len(shape))))
    stretched = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    return grad.sum(axis=stretched, keepdims=True) if stretched else grad


def _averaged_to(grad, shape):
    grad = grad.mean(axis=tuple(range(grad.ndim - len(shape))))
    stretched = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    return grad.mean(axis=stretched, keepdims=True) if stretched else grad


class Mul(Function):
    def forward(self, a, b):
        self.save_for_backward(a, b)
        return a * b

    def backward(self, g):
        a, b = self.saved_tensors
        da, db = pick("operands", (g * factor("b in da", pick("da operand", b, own=a)),
                                   g * factor("a in db", pick("db operand", a, own=b))),
                      swapped=(g * a, g * b))
        da = pick("da output", da, out=g * (a * b))
        return (pick("sum a", _summed_to(da, a.shape), kept=da),
                pick("sum b", _summed_to(db, b.shape), kept=db, mean=_averaged_to(db, b.shape),
                     everything=db if db.shape == b.shape else np.full(b.shape, db.sum())))
