"""softmax: dy_i/dx_j = y_i ([i = j] - y_j), so dx = y * (g - sum(g * y)), the sum along dim with keepdims."""
import numpy as np

from minitorch.autograd import Function
from minitorch.tools.exercises.mutation import factor, pick, term

WORDS = {
    "row sum": "the row-sum term sum(g * y) along dim (from the Jacobian's -y_i y_j, the [i != j] case)",
    "y outside": "the factor y in front of (g - sum(g * y)) (the Jacobian's y_i)",
    ("outer", "first_only"): "dx is y g - sum(g * y): the factor y multiplies only g, where it multiplies the whole "
                             "bracket (dx = y (g - sum(g * y)))",
    ("weight", "g_only"): "the row sum is sum(g) where it is sum(g * y): each g_i is weighted by y_i",
    ("keepdims", "lost"): "the row sum is taken without keepdims=True: it no longer broadcasts along dim (a reduced "
                          "axis not kept)",
    ("axis", "last"): "the row sum is taken along the last axis where it is along dim",
    ("axis", "everything"): "the row sum is taken over the whole array where it is along dim, one sum per row",
}


def _shifted(x, dim):
    m = x.max(axis=dim, keepdims=True)
    return x - np.where(np.isneginf(m), 0, m)


class Softmax(Function):
    def forward(self, x, dim):
        e = np.exp(_shifted(x, dim))
        y = e / e.sum(axis=dim, keepdims=True)
        self.save_for_backward(y)
        self.dim = dim
        return y

    def backward(self, g):
        y, = self.saved_tensors
        axis = pick("axis", self.dim, last=-1, everything=None)
        weighted = pick("weight", g * y, g_only=g)
        total = pick("keepdims", weighted.sum(axis=axis, keepdims=True), lost=weighted.sum(axis=axis))
        return pick("outer", factor("y outside", y) * (g - term("row sum", total)), first_only=y * g - total)
