"""Exercise 5 (mul): the product a * b, with broadcasting.

forward(a, b) gets two float64 NumPy arrays whose shapes broadcast (as in NumPy: (3, 1) and (4,) give (3, 4)) and
returns a * b, declaring the arrays backward needs with `self.save_for_backward(a, ...)`. backward(g) gets
g = dL/d(out), shaped like the output, reads them back with `a, ... = self.saved_tensors` and returns (dL/da, dL/db),
one gradient per input. Derive both from d(a b) = b da + a db. (Every exercise saves arrays this way; Python values,
such as a dim or a shape, may be plain attributes of self.)

Return each gradient in its input's shape. The engine normally sums a gradient back over the broadcast dims for
you (autograd.unbroadcast, the one place where broadcasting is undone); the grader turns that off (strict shapes),
so here you do it, as in the unbroadcast exercise.

Declare every array backward reads with self.save_for_backward(...) and read it back with self.saved_tensors (Python
values such as dims and flags stay plain attributes of self). The check runs your op as the engine runs it: in
backward, g and what you saved are read-only, and forward's inputs must not change (compute new arrays: g / b, not
g /= b); it also runs case 1 in float32, where the output and each gradient must be float32 too (new arrays in the
input's dtype: np.zeros(s, dtype=x.dtype)).

Check: python3 -m minitorch.tools.exercises check mul --dir THIS_FOLDER
Hint: python3 -m minitorch.tools.exercises hint mul
"""
from minitorch.autograd import Function


class Mul(Function):
    def forward(self, a, b):
        raise NotImplementedError

    def backward(self, g):
        raise NotImplementedError
