"""A wrong answer: the forward's variance divides by n - 1 (np.var(ddof=1)), where LayerNorm's is biased (1/n)."""
import numpy as np

from minitorch.autograd import Function

MISTAKE = r"biased|n - 1|variance"


class LayerNorm(Function):
    def forward(self, x, weight, bias, normalized_ndim, eps):
        self.shape, self.w_shape = x.shape, x.shape[x.ndim - normalized_ndim:]
        n = int(np.prod(self.w_shape))
        rows = x.reshape(-1, n)
        rstd = 1 / np.sqrt(rows.var(axis=1, ddof=1, keepdims=True) + eps)
        xhat = (rows - rows.mean(axis=1, keepdims=True)) * rstd
        self.save_for_backward(xhat, rstd, weight)
        self.has_bias = bias is not None
        y = xhat if weight is None else xhat * weight.reshape(n)
        return (y if bias is None else y + bias.reshape(n)).reshape(x.shape)

    def backward(self, g):
        xhat, rstd, w = self.saved_tensors
        g = g.reshape(xhat.shape)
        gh = g if w is None else g * w.reshape(-1)
        dx = rstd * (gh - gh.mean(axis=1, keepdims=True) - xhat * (gh * xhat).mean(axis=1, keepdims=True))
        dw = None if w is None else (g * xhat).sum(axis=0).reshape(self.w_shape)
        db = g.sum(axis=0).reshape(self.w_shape) if self.has_bias else None
        return dx.reshape(self.shape), dw, db
