"""A wrong answer: the quotient rule's b term as -g a / b**2, which is right until b**2 overflows (b near 1e200,
which the stub calls a fine divisor)."""
from minitorch.autograd import Function

MISTAKE = r"b\*\*2"


def reduce_to(x, shape):
    while x.ndim > len(shape):
        x = x.sum(axis=0)
    for i, n in enumerate(shape):
        if n == 1 and x.shape[i] != 1:
            x = x.sum(axis=i, keepdims=True)
    return x


class Div(Function):
    def forward(self, a, b):
        self.save_for_backward(a, b)
        return a / b

    def backward(self, g):
        a, b = self.saved_tensors
        return reduce_to(g / b, a.shape), reduce_to(-g * a / b**2, b.shape)
