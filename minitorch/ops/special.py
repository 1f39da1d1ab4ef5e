"""The error function, for erf-based GELU and for user ops (minitorch.ops.array_ops.erf).

NumPy has no erf, so it is computed here from two expansions, each to about 1e-15 of math.erf
(tests/engine/test_everyday_api.py):
    |x| <= 3:  erf(x) = 2/sqrt(pi) e^(-x^2) sum_n (2 x^2)^n x / (1 3 5 ... (2n+1))     (all terms positive: no
               cancellation; 90 terms)
    |x| > 3:   erfc(x) = e^(-x^2) / (sqrt(pi) (x + (1/2) / (x + 1 / (x + (3/2) / (x + ...)))))   (60 levels)
with array operations only, so the same code runs on NumPy and CuPy.
"""
import math

from .. import backend
from ..core import Function

SERIES_TERMS, FRACTION_DEPTH, SPLIT = 90, 60, 3.0


def erf_array(a):
    """erf of an array, elementwise, in a's dtype."""
    xp = backend.xp_of(a)
    x = xp.abs(a)
    s = xp.minimum(x, SPLIT)   # each expansion gets inputs from its own range only (no overflow, no 0 / 0)
    two_s2, term = 2 * s * s, s
    total = s
    for n in range(1, SERIES_TERMS):
        term = term * two_s2 / (2 * n + 1)
        total = total + term
    series = (2 / math.sqrt(math.pi)) * xp.exp(-s * s) * total
    c = xp.maximum(x, SPLIT)
    fraction = c
    for k in range(FRACTION_DEPTH, 0, -1):
        fraction = c + (k / 2) / fraction
    tail = 1 - xp.exp(-c * c) / (math.sqrt(math.pi) * fraction)
    return xp.sign(a) * xp.where(x <= SPLIT, series, tail)


class Erf(Function):
    """y = erf(a) = 2/sqrt(pi) int_0^a exp(-t^2) dt;  dy/da = 2/sqrt(pi) exp(-a^2)."""
    needs_float = True
    TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)

    def forward(self, a):
        self.save_for_backward(a)
        return erf_array(a)

    def backward(self, g):
        a, = self.saved_tensors
        return g * (self.TWO_OVER_SQRT_PI * math.e ** -(a * a))   # (e ** x, not exp: an operator, on arrays
        # and on Tensors alike; array_ops imports this module)
