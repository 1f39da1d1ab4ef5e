"""A wrong answer: dA written with einsum as G B, the indices of B not swapped."""
import numpy as np

from minitorch.autograd import Function

MISTAKE = r"B is not transposed"


def reduce_to(x, shape):
    while x.ndim > len(shape):
        x = x.sum(axis=0)
    for i, n in enumerate(shape):
        if n == 1 and x.shape[i] != 1:
            x = x.sum(axis=i, keepdims=True)
    return x


class MatMul(Function):
    def forward(self, a, b):
        self.save_for_backward(a, b)
        return a @ b

    def backward(self, g):
        a, b = self.saved_tensors
        da = np.einsum("...ij,...jk->...ik", g, b)
        return reduce_to(da, a.shape), reduce_to(np.swapaxes(a, -1, -2) @ g, b.shape)
