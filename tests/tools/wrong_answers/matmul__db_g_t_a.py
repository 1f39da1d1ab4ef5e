"""A wrong answer: dB written as G^T A (the factors in the wrong order), transposed with swapaxes."""
from minitorch.autograd import Function

MISTAKE = r"transposed|wrong order"


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
        return reduce_to(g @ b.swapaxes(-1, -2), a.shape), reduce_to(g.swapaxes(-1, -2) @ a, b.shape)
