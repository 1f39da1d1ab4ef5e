"""PyTorch's top-level functions (torch.where, torch.cat, torch.exp(x), ...): free forms of what Tensor does."""
import numpy as np

from . import backend, ops
from .tensor import Tensor, where_op


def where(cond, a, b):
    """a where cond else b, elementwise with broadcasting; a and b may be tensors or numbers."""
    return where_op(cond, a, b)


def matmul(a, b):
    """a @ b with NumPy's (and torch.matmul's) rules: batched, broadcast batch dims, 1-D operands."""
    return a @ b if isinstance(a, Tensor) else Tensor.__rmatmul__(b, a)


def mm(input, mat2):
    """input (n, m) @ mat2 (m, p): two matrices, no broadcasting (torch.mm; matmul broadcasts)."""
    if not isinstance(input, Tensor):
        raise RuntimeError(f"mm: input must be a 2-D Tensor, got {type(input).__name__}")
    return input.mm(mat2)


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Whether |input - other| <= atol + rtol |other| everywhere (a Python bool, as torch.allclose)."""
    a, b = (x.data if isinstance(x, Tensor) else x for x in (input, other))
    xp = backend.xp_of(a) if backend.is_array(a) else np
    return bool(xp.allclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan))


def is_tensor(obj):
    """Whether obj is a minitorch Tensor (a Parameter too)."""
    return isinstance(obj, Tensor)


def cat(tensors, dim=0):
    """Join tensors along an existing dim."""
    if not tensors:
        raise ValueError("cat: needs at least one tensor")
    return ops.Cat.apply(*tensors, dim=dim)


def stack(tensors, dim=0):
    """Join tensors of one shape along a new dim."""
    if not tensors:
        raise ValueError("stack: needs at least one tensor")
    return ops.Stack.apply(*tensors, dim=dim)


# ----- PyTorch's top-level forms of Tensor methods (torch.exp(x) is x.exp()), with its argument names -----
def sigmoid(input): return input.sigmoid()
def tanh(input): return input.tanh()
def relu(input): return input.relu()
def exp(input): return input.exp()
def log(input): return input.log()
def sum(input, dim=None, keepdim=False): return input.sum(dim=dim, keepdim=keepdim)    # noqa: A001 (torch.sum)
def mean(input, dim=None, keepdim=False): return input.mean(dim=dim, keepdim=keepdim)
def argmax(input, dim=None, keepdim=False): return input.argmax(dim=dim, keepdim=keepdim)
def clamp(input, min=None, max=None): return input.clamp(min=min, max=max)               # noqa: A002


__all__ = ["where", "matmul", "mm", "allclose", "is_tensor", "cat", "stack", "sigmoid", "tanh", "relu", "exp", "log",
           "sum", "mean", "argmax", "clamp"]
