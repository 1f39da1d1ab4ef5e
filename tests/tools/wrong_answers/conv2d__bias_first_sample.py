"""A wrong answer: dbias summed over the output places of the first sample only."""
import numpy as np

from minitorch.autograd import Function
from minitorch.ops.windows import im2col_array

MISTAKE = r"dbias is from the first sample only"


class Conv2d(Function):
    def forward(self, x, weight, bias, *, w):
        cols = im2col_array(x, w)
        N, C, KH, KW, HO, WO = cols.shape
        self.save_for_backward(weight, cols)
        self.w, self.x_shape = w, x.shape
        out = np.einsum("ok,nkl->nol", weight.reshape(weight.shape[0], -1), cols.reshape(N, C * KH * KW, HO * WO))
        return (out + bias[:, None]).reshape(N, weight.shape[0], HO, WO)

    def backward(self, g):
        weight, cols = self.saved_tensors
        w, (N, C, H, W) = self.w, self.x_shape
        HO, WO = g.shape[2:]
        dweight = np.einsum("nopq,ncklpq->ockl", g, cols)
        dbias = g[0].sum(axis=(1, 2))
        dcols = np.einsum("ockl,nopq->ncklpq", weight, g)
        padded = np.zeros((N, C, H + 2 * w.ph, W + 2 * w.pw))
        for i in range(weight.shape[2]):
            for j in range(weight.shape[3]):
                r, s = i * w.dh, j * w.dw
                padded[:, :, r:r + w.sh * (HO - 1) + 1:w.sh, s:s + w.sw * (WO - 1) + 1:w.sw] += dcols[:, :, i, j]
        return padded[:, :, w.ph:w.ph + H, w.pw:w.pw + W], dweight, dbias
