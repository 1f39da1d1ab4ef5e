"""Exercise 2 (div): the quotient a / b, with broadcasting.

forward(a, b) -> a / b for float64 arrays whose shapes broadcast; backward(g) -> (dL/da, dL/db). Derive them from
the quotient rule, d(a / b) = da / b - a db / b^2, and write the second term so that it cannot overflow where b^2
would (b = 1e200 is a fine divisor, b^2 is inf).

Check: python3 -m minitorch.tools.exercises check div --dir THIS_FOLDER
Hint: python3 -m minitorch.tools.exercises hint div
"""
from minitorch.autograd import Function


class Div(Function):
    def forward(self, a, b):
        raise NotImplementedError

    def backward(self, g):
        raise NotImplementedError
