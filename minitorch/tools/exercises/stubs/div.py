"""Exercise 6 (div): the quotient a / b, with broadcasting.

forward(a, b) -> a / b for float64 arrays whose shapes broadcast; backward(g) -> (dL/da, dL/db), each in its
input's shape (sum over broadcast dims, as in mul). Derive them with the quotient rule, and write the b term so
that it cannot overflow where b^2 would (b = 1e200 is a fine divisor, b^2 is inf).

Declare every array backward reads with self.save_for_backward(...) and read it back with self.saved_tensors (Python
values such as dims and flags stay plain attributes of self). The check runs your op as the engine runs it: in
backward, g and what you saved are read-only, and forward's inputs must not change (compute new arrays: g / b, not
g /= b); it also runs case 1 in float32, where the output and each gradient must be float32 too (new arrays in the
input's dtype: np.zeros(s, dtype=x.dtype)). The check draws a and b near 1e200 too.

Check: python3 -m minitorch.tools.exercises check div --dir THIS_FOLDER
Hint: python3 -m minitorch.tools.exercises hint div
"""
from minitorch.autograd import Function


class Div(Function):
    def forward(self, a, b):
        raise NotImplementedError

    def backward(self, g):
        raise NotImplementedError
