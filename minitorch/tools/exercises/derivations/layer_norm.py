"""layer_norm: on a row of n, xhat = (x - mean) rstd; with gh = g w, dx = rstd (gh - mean(gh) - xhat mean(gh xhat))
(row means); dw = sum over rows of g xhat, db = sum over rows of g."""
import numpy as np

from minitorch.autograd import Function
from minitorch.tools.exercises.mutation import factor, pick, scale, term

WORDS = {
    "gh": "the [i = j] term gh of dx (gh = g w)",
    "mean term": "dL/dx's mean term (-rstd mean(gh), from d mean / d x_j = 1/n)",
    "xhat term": "dL/dx's xhat term (the variance's: -rstd xhat mean(gh xhat))",
    "rstd": "dL/dx's overall factor rstd = 1/sqrt(var + eps)",
    "w in gh": "the weight w in gh = g w (dL/dxhat = g w)",
    ("mean of", "g"): "dL/dx's mean term uses mean(g) where it is mean(gh), gh = g w",
    ("xhat mean", "no_xhat"): "dL/dx's xhat term uses mean(gh) where it is mean(gh xhat)",
    ("rows", "mean"): "dw and db are averaged over the rows where one w serves every row: sum them",
    "xhat in dw": "dL/dw's factor xhat (y = w xhat + b: dw = sum of g xhat over the rows)",
    ("dw of", "x"): "dL/dw uses x where it uses xhat (y = w xhat + b: dw = sum of g xhat)",
    ("db of", "xhat"): "dL/db is the sum of g xhat where it is the sum of g (y = w xhat + b: db = sum of g)",
    ("sum rows", "kept"): "dL/dw is not summed over the rows (one w serves them all: dw = (g xhat) summed over "
                          "every row)",
}


class LayerNorm(Function):
    def forward(self, x, weight, bias, normalized_ndim, eps):
        self.shape, self.w_shape = x.shape, x.shape[x.ndim - normalized_ndim:]
        n = int(np.prod(self.w_shape))
        rows = x.reshape(-1, n)
        centered = rows - rows.mean(axis=1, keepdims=True)
        rstd = 1 / np.sqrt((centered ** 2).mean(axis=1, keepdims=True) + eps)
        xhat = centered * rstd
        self.save_for_backward(x, xhat, rstd, weight)
        self.has_b = bias is not None
        y = xhat if weight is None else xhat * weight.reshape(n)
        return (y if bias is None else y + bias.reshape(n)).reshape(x.shape)

    def backward(self, g):
        x, xhat, rstd, w = self.saved_tensors
        g = g.reshape(xhat.shape)
        gh = g if w is None else g * factor("w in gh", w.reshape(-1))
        dx = scale("rstd", rstd) * (term("gh", gh) - term("mean term", pick("mean of", gh, g=g).mean(
            axis=1, keepdims=True)) - term("xhat term", xhat * pick("xhat mean", gh * xhat, no_xhat=gh).mean(
                axis=1, keepdims=True)))
        reduce = pick("rows", np.sum, mean=np.mean)
        dw = None
        if w is not None:
            g_xhat = g * factor("xhat in dw", pick("dw of", xhat, x=x.reshape(xhat.shape)))
            dw = pick("sum rows", reduce(g_xhat, axis=0).reshape(self.w_shape),
                      kept=g_xhat.reshape(self.shape[:len(self.shape) - len(self.w_shape)] + self.w_shape))
        db = reduce(g * pick("db of", 1, xhat=xhat), axis=0).reshape(self.w_shape) if self.has_b else None
        return dx.reshape(self.shape), dw, db
