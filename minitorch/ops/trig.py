"""sin and cos, each forward next to its local derivative; each backward is written with array_ops' cos and sin, which
take an array or a Tensor (create_graph), so that the derivatives of any order are available."""
from .. import backend
from ..core import Function
from . import array_ops as A


class Sin(Function):
    needs_float = True

    def forward(self, a):
        self.save_for_backward(a)
        return backend.xp_of(a).sin(a)

    def backward(self, g):  # d sin(a) = cos(a) da
        a, = self.saved_tensors
        return g * A.cos(a)


class Cos(Function):
    needs_float = True

    def forward(self, a):
        self.save_for_backward(a)
        return backend.xp_of(a).cos(a)

    def backward(self, g):  # d cos(a) = -sin(a) da
        a, = self.saved_tensors
        return -(g * A.sin(a))
