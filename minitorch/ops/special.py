"""The error function, for erf-based GELU and for user ops (minitorch.autograd.array_ops.erf)."""
import math

import numpy as np

from .. import backend
from ..autograd import Function
from . import generic

_erf = np.frompyfunc(math.erf, 1, 1)   # math.erf is exact to double precision; NumPy has no erf of its own


def erf_array(a):
    """erf of a CPU array, elementwise, in a's dtype."""
    if backend.device_of(a) != "cpu":
        raise NotImplementedError("erf: minitorch computes erf on the CPU only (math.erf); move the tensor with "
                                  ".cpu(), or use the tanh form (F.gelu(x, approximate='tanh'))")
    return np.asarray(_erf(a), dtype=a.dtype)


class Erf(Function):
    """y = erf(a) = 2/sqrt(pi) int_0^a exp(-t^2) dt;  dy/da = 2/sqrt(pi) exp(-a^2)."""
    needs_float = True
    TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)

    def forward(self, a):
        self.a = a
        return erf_array(a)

    def backward(self, g):
        minus_a2 = -(self.a * self.a)
        gauss = backend.xp_of(minus_a2).exp(minus_a2) if generic.is_array(minus_a2) else minus_a2.exp()
        return g * (self.TWO_OVER_SQRT_PI * gauss)
