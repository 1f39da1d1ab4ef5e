"""A wrong answer: a broadcast input's gradient is summed over every axis (to one number), then broadcast back to
its shape: summed over the kept axes too."""
import numpy as np

from minitorch.autograd import Function

MISTAKE = r"summed back over the dims .* broadcast|sum it over the broadcast axes"


class Mul(Function):
    def forward(self, a, b):
        self.save_for_backward(a, b)
        return a * b

    def backward(self, g):
        a, b = self.saved_tensors
        da, db = g * b, g * a
        if da.shape != a.shape:
            da = np.full(a.shape, da.sum())
        if db.shape != b.shape:
            db = np.full(b.shape, db.sum())
        return da, db
