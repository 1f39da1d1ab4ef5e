"""conv2d: out = W2 @ cols2 + bias; dW2 = sum over n of g cols2^T, dbias = g summed over n, y, z, dcols = W2^T g;
col2im adds each entry of dcols back at the (strided, dilated, padded) place of x it was copied from."""
import numpy as np

from minitorch.autograd import Function
from minitorch.ops.windows import im2col_array
from minitorch.tools.exercises.mutation import instead, pick, step

WORDS = {
    "add": "col2im adding each window's gradient into dx",
    ("add", "assign"): "dx is right where one window reads x and wrong where windows overlap: col2im must add each "
                       "window's gradient into dx (+=), not assign it (=): the overlapping windows' gradients sum",
    ("row stride", "ignored"): "col2im ignores the stride along rows: window row y starts at y * stride, so the "
                               "slice steps by the stride",
    ("col stride", "ignored"): "col2im ignores the stride along columns: window column z starts at z * stride, so "
                               "the slice steps by the stride",
    ("row dilation", "ignored"): "col2im ignores the dilation along rows: kernel row i reads row i * dilation, not i",
    ("crop", "wrong_side"): "col2im crops the padding from the wrong side: dx = padded[ph : ph + H, pw : pw + W], "
                            "not padded[:H, :W] (the padding is on both sides)",
    ("kernel", "flipped"): "dx uses the kernel flipped: im2col and a product compute a correlation, whose backward "
                           "uses the same kernel, unflipped",
    ("dW over", "one_sample"): "dweight is from the first sample only: sum g cols2^T over the batch",
    ("dW over", "per_sample"): "dweight is kept per sample, (N, O, C, kh, kw): one weight serves every sample, so sum "
                               "g cols2^T over the batch",
    ("dbias over", "one_sample"): "dbias is from the first sample only: sum g over the batch too",
    ("dbias over", "mean"): "dbias averages g where it sums it (bias is added to every output place of every sample)",
    ("dW of", "cols_t"): "dweight is cols2 g^T (transposed, in the wrong order) where it is g cols2^T",
}


class Conv2d(Function):
    def forward(self, x, weight, bias, *, w):
        cols = im2col_array(x, w)
        n, c, kh, kw, ho, wo = cols.shape
        cols2 = cols.reshape(n, c * kh * kw, ho * wo)
        self.save_for_backward(weight, cols2)
        self.w, self.x_shape = w, x.shape
        return (np.einsum("ok,nkl->nol", weight.reshape(len(weight), -1), cols2) + bias[:, None]).reshape(
            n, len(weight), ho, wo)

    def backward(self, g):
        weight, cols2 = self.saved_tensors
        (n, c, h, width), (o, _, kh, kw), w = self.x_shape, weight.shape, self.w
        ho, wo = g.shape[2:]
        g2 = g.reshape(n, o, ho * wo)
        d_weight = pick("dW over", np.einsum("nol,nkl->ok", g2, cols2), one_sample=g2[0] @ cols2[0].T,
                          per_sample=np.einsum("nol,nkl->nok", g2, cols2))
        d_weight = pick("dW of", d_weight, cols_t=np.einsum("nol,nkl->ko", g2, cols2).reshape(o, -1))
        d_bias = pick("dbias over", g.sum(axis=(0, 2, 3)), one_sample=g[0].sum(axis=(1, 2)),
                      mean=g.mean(axis=(0, 2, 3)))
        kernel = pick("kernel", weight, flipped=weight[:, :, ::-1, ::-1])
        d_cols = np.einsum("ok,nol->nkl", kernel.reshape(o, -1), g2).reshape(n, c, kh, kw, ho, wo)
        padded = np.zeros((n, c, h + 2 * w.ph, width + 2 * w.pw), dtype=g.dtype)
        for i in range(kh):
            for j in range(kw):
                top, left = i * pick("row dilation", w.dh, ignored=1), j * w.dw
                rows = pick("row stride", slice(top, top + w.sh * (ho - 1) + 1, w.sh), ignored=slice(top, top + ho))
                cols = pick("col stride", slice(left, left + w.sw * (wo - 1) + 1, w.sw), ignored=slice(left, left + wo))
                if step("add"):
                    padded[:, :, rows, cols] += d_cols[:, :, i, j]
                elif instead("add", "assign"):
                    padded[:, :, rows, cols] = d_cols[:, :, i, j]
        dx = pick("crop", padded[:, :, w.ph:w.ph + h, w.pw:w.pw + width], wrong_side=padded[:, :, :h, :width])
        d_weight = pick("dW over", d_weight.reshape(weight.shape), one_sample=d_weight.reshape(weight.shape),
                        per_sample=d_weight.reshape((n,) + weight.shape))
        return dx, d_weight, d_bias
