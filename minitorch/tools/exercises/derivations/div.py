"""div: the quotient rule, d(a/b) = da / b - (a / b^2) db, the b term written as (g / b) (a / b) so that it cannot
overflow where b^2 would; each gradient summed back over the dims its input was broadcast along."""
from minitorch.autograd import Function
from minitorch.tools.exercises.mutation import factor, pick

WORDS = {
    "g in da": "dL/da's incoming gradient g (da = g / b)",
    "b in da": "dL/da's division by b (da = g / b)",
    ("da", "times"): "dL/da is g * b: multiplied by b where the quotient rule divides (da = g / b)",
    ("da", "out"): "dL/da is g times the output a / b: d(a/b)/da is 1/b (da = g / b)",
    ("db sign", "plus"): "dL/db's minus sign (d(1/b) = -1/b^2) is missing: the quotient rule's b term has its sign "
                         "flipped",
    "g in db": "dL/db's incoming gradient g (db = -(g / b)(a / b))",
    ("db a/b", "no_b"): "dL/db is -(g / b) a: b is not squared (d(a/b)/db = -a / b^2, two divisions by b)",
    ("db a/b", "no_a"): "dL/db is -(g / b) / b: the factor a is missing (d(a/b)/db = -a / b^2)",
    ("swapped", "swapped"): "the two gradients are returned in the wrong order: (db, da) where apply(a, b) wants "
                            "(da, db)",
    ("sum a", "kept"): "dL/da is not summed back over the dims a was broadcast along",
    ("sum b", "kept"): "dL/db is not summed back over the dims b was broadcast along",
}


def _summed_to(grad, shape):
    """grad summed over the axes broadcasting added (leading) or stretched (size 1 in shape)."""
    grad = grad.sum(axis=tuple(range(grad.ndim - len(shape))))
    stretched = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    return grad.sum(axis=stretched, keepdims=True) if stretched else grad


class Div(Function):
    def forward(self, a, b):
        self.save_for_backward(a, b)
        return a / b

    def backward(self, g):
        a, b = self.saved_tensors
        da = pick("da", factor("g in da", g) / factor("b in da", b), times=g * b, out=g * (a / b))
        db = pick("db sign", -(factor("g in db", g) / b), plus=g / b) * pick("db a/b", a / b, no_b=a, no_a=1 / b)
        da, db = pick("sum a", _summed_to(da, a.shape), kept=da), pick("sum b", _summed_to(db, b.shape), kept=db)
        return pick("swapped", (da, db), swapped=(db, da))
