"""Exercise 1 (mul): the product a * b, with broadcasting.

forward(a, b) gets two float64 NumPy arrays whose shapes broadcast (as in NumPy: (3, 1) and (4,) give (3, 4)) and
returns a * b, saving on `self` what backward needs. backward(g) gets g = dL/d(out), shaped like the output, and
returns (dL/da, dL/db). Derive both from d(a b) = b da + a db.

A gradient may be returned in the output's (broadcast) shape: the engine sums it back over the broadcast dims to
each input's shape (autograd.unbroadcast, the one place where broadcasting is undone). Exercise 3 (sum) is the
same operation written by hand.

Check: python3 -m minitorch.exercises check mul --dir THIS_FOLDER
Hint: python3 -m minitorch.exercises hint mul
"""
from minitorch.autograd import Function


class Mul(Function):
    def forward(self, a, b):
        raise NotImplementedError

    def backward(self, g):
        raise NotImplementedError
