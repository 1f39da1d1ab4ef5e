"""Flatten and Unflatten, as torch.nn's: reshapes that a Sequential can hold."""
from ..functions import flatten
from .module import Module


class Flatten(Module):
    """(N, d1, d2, ...) -> (N, d1 * d2 * ...): dims start_dim..end_dim merged (start_dim=1 keeps the batch)."""

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input):
        return flatten(input, self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """(..., d, ...) -> (..., *unflattened_size, ...): dim `dim` split into unflattened_size (one entry may be -1)."""

    def __init__(self, dim, unflattened_size):
        super().__init__()
        self.dim, self.unflattened_size = dim, tuple(unflattened_size)

    def forward(self, input):
        d = self.dim % input.ndim
        return input.reshape(input.shape[:d] + self.unflattened_size + input.shape[d + 1:])

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
