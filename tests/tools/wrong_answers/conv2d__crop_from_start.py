"""A wrong answer (the issue's): col2im adds into the padded array right, then crops [:H, :W], the padding taken
from the end only."""
import numpy as np

from minitorch.autograd import Function
from minitorch.ops.windows import im2col_array

MISTAKE = r"crops the padding from the wrong side"


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
        dbias = g.sum(axis=(0, 2, 3))
        dcols = np.einsum("ockl,nopq->ncklpq", weight, g)
        padded = np.zeros((N, C, H + 2 * w.ph, W + 2 * w.pw))
        for i in range(weight.shape[2]):
            for j in range(weight.shape[3]):
                r, s = i * w.dh, j * w.dw
                padded[:, :, r:r + w.sh * (HO - 1) + 1:w.sh, s:s + w.sw * (WO - 1) + 1:w.sw] += dcols[:, :, i, j]
        return padded[:, :, :H, :W], dweight, dbias
