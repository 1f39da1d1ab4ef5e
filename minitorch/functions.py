"""PyTorch's top-level functions (torch.where, torch.cat, torch.exp(x), ...): free forms of what Tensor does."""
import functools

import numpy as np

from . import backend, ops
from .core.grad_mode import is_grad_enabled
from .promotion import category
from .tensor import Tensor, promoted, where_op


def where(cond, a, b):
    """a where cond else b, elementwise with broadcasting; a and b may be tensors or numbers."""
    return where_op(cond, a, b)


def matmul(input, other):
    """input @ other with NumPy's (and torch.matmul's) rules: batched, broadcast batch dims, 1-D operands; PyTorch's
    argument names (torch.matmul(input=g, other=x))."""
    return input @ other if isinstance(input, Tensor) else Tensor.__rmatmul__(other, input)


def mm(input, mat2):
    """input (n, m) @ mat2 (m, p): two matrices, no broadcasting (torch.mm; matmul broadcasts)."""
    if not isinstance(input, Tensor):
        raise RuntimeError(f"mm: input must be a 2-D Tensor, got {type(input).__name__}")
    return input.mm(mat2)


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Whether |input - other| <= atol + rtol |other| everywhere (a Python bool, as torch.allclose)."""
    a, b = backend.array_of(input), backend.array_of(other)
    xp = backend.xp_of(a) if backend.is_array(a) else np
    return bool(xp.allclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan))


def equal(input, other):
    """Whether the two tensors have the same shape and the same values (a Python bool, as torch.equal)."""
    if input.shape != other.shape:
        return False
    return bool((input == other).all())


def is_tensor(obj):
    """Whether obj is a minitorch Tensor (a Parameter too)."""
    return isinstance(obj, Tensor)


def split(tensor, split_size_or_sections, dim=0): return tensor.split(split_size_or_sections, dim)
def chunk(input, chunks, dim=0): return input.chunk(chunks, dim)
def narrow(input, dim, start, length): return input.narrow(dim, start, length)


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


# ----- the rest of the elementwise methods, and PyTorch's top-level math that has no method here -----
def sqrt(input): return input.sqrt()
def abs(input): return input.abs()                                                     # noqa: A001
def erf(input): return input.erf()
def round(input, decimals=0): return input.round(decimals)                            # noqa: A001
def neg(input): return -input
def square(input): return input * input
def rsqrt(input): return 1.0 / input.sqrt()
def masked_fill(input, mask, value): return input.masked_fill(mask, value)
def clip(input, min=None, max=None): return input.clamp(min=min, max=max)             # noqa: A002
def add(input, other, alpha=1): return Tensor.add(input, other, alpha)    # its alpha rule; a number input works too
def sub(input, other, alpha=1): return Tensor.sub(input, other, alpha)
def mul(input, other): return input * other   # a number or array first: Python calls Tensor.__rmul__ (array priority)
def div(input, other): return input / other
def norm(input, p="fro", dim=None, keepdim=False): return input.norm(p, dim, keepdim)
def amax(input, dim=None, keepdim=False): return input.amax(dim=dim, keepdim=keepdim)
def max(input, dim=None, keepdim=False): return input.max(dim=dim, keepdim=keepdim)   # noqa: A001
def min(input, dim=None, keepdim=False): return input.min(dim=dim, keepdim=keepdim)   # noqa: A001
def amin(input, dim=None, keepdim=False): return input.amin(dim=dim, keepdim=keepdim)
def argmin(input, dim=None, keepdim=False): return input.argmin(dim=dim, keepdim=keepdim)
def transpose(input, dim0, dim1): return input.transpose(dim0, dim1)
def reshape(input, shape): return input.reshape(shape)
def unsqueeze(input, dim): return input.unsqueeze(dim)
def squeeze(input, dim=None): return input.squeeze() if dim is None else input.squeeze(dim)
def permute(input, dims): return input.permute(*dims)
def t(input): return input.t()
def clone(input): return input.clone()
def numel(input): return input.numel()


def sin(input):
    """sin(input), elementwise; its gradient cos(input)."""
    return ops.Sin.apply(input)


def cos(input):
    """cos(input), elementwise; its gradient -sin(input)."""
    return ops.Cos.apply(input)


def pow(input, exponent):                                                              # noqa: A001
    """input ** exponent, either a tensor or a number (torch.pow): a tensor exponent gets its gradient too."""
    return input ** exponent if isinstance(input, Tensor) else Tensor.__rpow__(exponent, input)


def maximum(input, other):
    """The larger of two tensors, elementwise with broadcasting; where they are equal each gets half the gradient
    (torch.maximum's)."""
    _both_tensors("maximum", input, other)
    return ops.Maximum.apply(*promoted(ops.Maximum, input, other)[:2])


def minimum(input, other):
    """The smaller of two tensors, elementwise with broadcasting; ties share the gradient (torch.minimum's)."""
    _both_tensors("minimum", input, other)
    return ops.Minimum.apply(*promoted(ops.Minimum, input, other)[:2])


def _both_tensors(name, a, b):
    for arg, x in (("input", a), ("other", b)):
        if not isinstance(x, Tensor):   # (torch.maximum takes tensors only; clamp takes a number)
            raise TypeError(f"{name}(): argument '{arg}' must be Tensor, not {type(x).__name__}")


def flatten(input, start_dim=0, end_dim=-1):
    """input with dims start_dim..end_dim merged into one (torch.flatten)."""
    return input.flatten(start_dim, end_dim)


def dot(input, other):
    """The inner product of two 1-D tensors of one length (torch.dot: no broadcasting)."""
    if input.ndim != 1 or other.ndim != 1 or input.shape != other.shape:
        raise RuntimeError(f"dot: expects two 1-D tensors of one length, got shapes {input.shape} and {other.shape}")
    return input @ other


def _with_out(fn):
    """fn with PyTorch's out= argument: the result written into the tensor out, in place, and out returned."""
    @functools.wraps(fn)
    def call(*args, out=None, **kwargs):
        result = fn(*args, **kwargs)
        return result if out is None else _write_out(fn.__name__, out, result)
    return call


def _write_out(name, out, result):
    """result's values copied into out, as PyTorch's out=: refused where a gradient would be needed (out= is not
    recorded), where the shapes differ (PyTorch would resize out) or where the dtype cannot hold the result."""
    if not isinstance(out, Tensor):
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if is_grad_enabled() and (result.requires_grad or out.requires_grad):
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support automatic differentiation, "
                           f"but one of the arguments requires grad (as in PyTorch)")
    if out.shape != result.shape:
        raise RuntimeError(f"{name}(): out has shape {out.shape}, the result {result.shape}; minitorch does not "
                           f"resize out: make it of the result's shape")
    if category(result.dtype) > category(out.dtype):
        raise RuntimeError(f"{name}(): result type {result.dtype} can't be cast to the desired output type "
                           f"{out.dtype}")
    return out.copy_(result)


ELEMENTWISE = ["sigmoid", "tanh", "relu", "exp", "log", "sqrt", "abs", "erf", "round", "neg", "square",
               "rsqrt", "sin", "cos", "pow", "maximum", "minimum", "masked_fill", "clip", "clamp", "add", "sub", "mul",
               "div", "where"]
__all__ = ["where", "matmul", "mm", "allclose", "is_tensor", "cat", "stack", "sigmoid", "tanh", "relu", "exp", "log",
           "sum", "mean", "argmax", "clamp", "sqrt", "abs", "erf", "round", "neg", "square", "rsqrt",
           "masked_fill", "clip", "add", "sub", "mul", "div", "amax", "max", "transpose", "reshape", "unsqueeze",
           "squeeze", "permute", "t", "clone", "numel", "sin", "cos", "pow", "maximum", "minimum", "flatten", "dot"]
# out= for the elementwise functions and the matrix products, as PyTorch's
for _name in ELEMENTWISE + ["matmul", "mm"]:
    globals()[_name] = _with_out(globals()[_name])
