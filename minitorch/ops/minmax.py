"""maximum and minimum of two tensors, elementwise with broadcasting, ties sharing the gradient as PyTorch's."""
from .. import backend
from ..core import Function


class Maximum(Function):
    """out = the larger of a and b, elementwise with broadcasting. As PyTorch's: where a == b each side gets half
    the gradient. The comparisons are saved (bool masks: constants), not a and b."""

    def forward(self, a, b):
        self.save_for_backward(a > b, a == b)
        return backend.xp_of(a if backend.is_array(a) else b).maximum(a, b)

    def backward(self, g):  # d max(a, b) = [a > b] da + [a < b] db, halves at a == b
        wins, tie = self.saved_tensors
        half = 0.5 * (g * tie)
        return g * wins + half, g * ~(wins | tie) + half


class Minimum(Function):
    """out = the smaller of a and b, elementwise with broadcasting; ties share the gradient equally (PyTorch's)."""

    def forward(self, a, b):
        self.save_for_backward(a < b, a == b)
        return backend.xp_of(a if backend.is_array(a) else b).minimum(a, b)

    def backward(self, g):  # d min(a, b) = [a < b] da + [a > b] db, halves at a == b
        wins, tie = self.saved_tensors
        half = 0.5 * (g * tie)
        return g * wins + half, g * ~(wins | tie) + half
