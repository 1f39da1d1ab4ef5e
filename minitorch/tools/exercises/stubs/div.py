"""Exercise 6 (div): the quotient a / b, with broadcasting.

forward(a, b) -> a / b for float64 arrays whose shapes broadcast; backward(g) -> (dL/da, dL/db), each in its
input's shape (sum over broadcast dims, as in mul). Derive them with the quotient rule, and write the b term so
that it cannot overflow where b^2 would (b = 1e200 is a fine divisor, b^2 is inf).

Check: python3 -m minitorch.tools.exercises check div --dir THIS_FOLDER
Hint: python3 -m minitorch.tools.exercises hint div
"""
from minitorch.autograd import Function


class Div(Function):
    def forward(self, a, b):
        raise NotImplementedError

    def backward(self, g):
        raise NotImplementedError
