"""A wrong answer: the softmax of the scores without the max shift (a fully masked row still gets weights 0), which
overflows when the scores are near 1000."""
import numpy as np

from minitorch.autograd import Function
from minitorch.ops.dropout import keep_mask

MISTAKE = r"subtract the max"


class ScaledDotProductAttention(Function):
    def forward(self, q, k, v, mask, words, dropout_p):
        self.scale = q.shape[-1] ** -0.5
        s = q @ k.swapaxes(-1, -2) * self.scale
        if mask is not None:
            s = np.where(mask, s, -np.inf)
        e = np.exp(s)
        total = e.sum(axis=-1, keepdims=True)
        w = e / np.where(total == 0, 1, total)
        keep = keep_mask(words, dropout_p) if dropout_p else None
        self.p = dropout_p
        self.save_for_backward(q, k, v, w, keep)
        a = w if keep is None else w * keep / (1 - dropout_p)
        return a @ v

    def backward(self, g):
        q, k, v, w, keep = self.saved_tensors
        a = w if keep is None else w * keep / (1 - self.p)
        dw = g @ v.swapaxes(-1, -2)
        if keep is not None:
            dw = dw * keep / (1 - self.p)
        ds = w * (dw - (dw * w).sum(axis=-1, keepdims=True))
        return ds @ k * self.scale, ds.swapaxes(-1, -2) @ q * self.scale, a.swapaxes(-1, -2) @ g, None, None
