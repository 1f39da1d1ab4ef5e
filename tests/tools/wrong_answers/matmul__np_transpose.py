"""A wrong answer: transposes with np.transpose, which reverses every axis of a batched array."""
import numpy as np

from minitorch.autograd import Function

MISTAKE = r"reverses every axis|swapaxes"


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
        return reduce_to(g @ np.transpose(b), a.shape), reduce_to(np.transpose(a) @ g, b.shape)
