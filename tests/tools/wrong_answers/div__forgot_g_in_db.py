"""A wrong answer: dL/db is -a / b^2, the local derivative alone, without the incoming gradient g."""
from minitorch.autograd import Function

MISTAKE = r"incoming gradient g"


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
        db = -a / b**2
        return reduce_to(g / b, a.shape), reduce_to(db, b.shape)
