"""A wrong answer: dL/da written as g times the output (a / b), as if d(a/b)/da were a/b."""
from minitorch.autograd import Function

MISTAKE = r"dL/da.*(output|a / b)"


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
        return reduce_to(g * (a / b), a.shape), reduce_to(-(g / b) * (a / b), b.shape)
