"""A wrong answer: the gradient of a sum is ones (d out / d a_i = 1), without the incoming gradient g."""
import numpy as np

from minitorch.autograd import Function
from minitorch.ops import normalize_dims

MISTAKE = r"incoming gradient g"


class Sum(Function):
    def forward(self, a, dim=None, keepdim=False):
        self.shape = a.shape
        return a.sum(axis=normalize_dims(dim, a.ndim), keepdims=keepdim)

    def backward(self, g):
        return np.ones(self.shape)
