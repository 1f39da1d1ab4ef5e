"""A wrong answer: divides the incoming gradient in place (g /= b) and reuses it for the b term; its numbers are
right, but in the engine g is shared with other ops (and may be read-only)."""
from minitorch.autograd import Function

MISTAKE = r"writes into g"


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
        g /= b
        return reduce_to(g, a.shape), reduce_to(-g * a / b, b.shape)
