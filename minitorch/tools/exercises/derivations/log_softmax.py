"""log_softmax: y = x - log S, dy_i/dx_j = [i = j] - p_j with p = exp(y): dx = g - exp(y) * sum(g), the sum along
dim with keepdims."""
import numpy as np

from minitorch.autograd import Function
from minitorch.tools.exercises.mutation import pick, term

WORDS = {
    "g": "the [i = j] term g of dx = g - exp(y) sum(g)",
    "row sum": "the row-sum term exp(y) * sum(g) along dim (from d log S / dx_j = p_j)",
    ("p", "y"): "the softmax p is taken as y itself where it is exp(y) (y is log p)",
    ("sum", "none"): "the row sum of g is missing: exp(y) * g where it is exp(y) * sum(g) along dim (every "
                     "output's log S depends on x_j)",
    ("keepdims", "lost"): "the row sum is taken without keepdims=True: it no longer broadcasts along dim (a reduced "
                          "axis not kept)",
    ("rule", "softmax"): "dx is softmax's backward p (g - sum(g p)) with p = exp(y): log-softmax's is g - p sum(g), "
                         "the row sum of g itself (dy_i/dx_j = [i = j] - p_j)",
    ("axis", "last"): "the row sum is taken along the last axis where it is along dim",
    ("axis", "everything"): "the row sum is taken over the whole array where it is along dim, one sum per row",
}


def _shifted(x, dim):
    m = x.max(axis=dim, keepdims=True)
    return x - np.where(np.isneginf(m), 0, m)


class LogSoftmax(Function):
    def forward(self, x, dim):
        z = _shifted(x, dim)
        y = z - np.log(np.exp(z).sum(axis=dim, keepdims=True))
        self.save_for_backward(y)
        self.dim = dim
        return y

    def backward(self, g):
        y, = self.saved_tensors
        axis = pick("axis", self.dim, last=-1, everything=None)
        total = pick("keepdims", g.sum(axis=axis, keepdims=True), lost=g.sum(axis=axis))
        p = pick("p", np.exp(y), y=y)
        return pick("rule", term("g", g) - term("row sum", p * pick("sum", total, none=g)),
                    softmax=np.exp(y) * (g - (g * np.exp(y)).sum(axis=self.dim, keepdims=True)))
