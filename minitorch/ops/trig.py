"""sin and cos, each forward next to its local derivative; each backward calls the other op on Tensors (under
create_graph) or the array function on arrays, so that the derivatives of any order are available."""
from .. import backend
from ..core import Function
from . import array_ops as A


def _cos(a):
    """cos of an array, or of a Tensor through Cos (so that Sin's backward can be differentiated again)."""
    return backend.xp_of(a).cos(a) if A.is_array(a) else Cos.apply(a)


def _sin(a):
    return backend.xp_of(a).sin(a) if A.is_array(a) else Sin.apply(a)


class Sin(Function):
    needs_float = True

    def forward(self, a):
        self.save_for_backward(a)
        return backend.xp_of(a).sin(a)

    def backward(self, g):  # d sin(a) = cos(a) da
        a, = self.saved_tensors
        return g * _cos(a)


class Cos(Function):
    needs_float = True

    def forward(self, a):
        self.save_for_backward(a)
        return backend.xp_of(a).cos(a)

    def backward(self, g):  # d cos(a) = -sin(a) da
        a, = self.saved_tensors
        return -(g * _sin(a))
