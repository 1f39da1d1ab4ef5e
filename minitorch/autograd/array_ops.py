"""The functions a backward is written with when its op should be differentiable twice: each takes an array (and
gives an array, on the fast path) or a Tensor (and gives a Tensor through differentiable ops, under
create_graph=True). Operators (+ - * / ** @, indexing, reshape, .T) already work on both.

    from minitorch.autograd import Function, array_ops as A

    class Softplus(Function):                 # y = log(1 + exp(a)),  dy/da = sigmoid(a)
        def forward(self, a):
            self.a = a                        # save inputs (or the output), not arrays computed from them
            return A.log(1 + A.exp(a))
        def backward(self, g):
            return g * A.sigmoid(self.a)      # not np.exp: under create_graph self.a is a Tensor

An array computed from the inputs and saved for backward must be rebuilt from the input Tensors in `recompute`, or
named in `constants` if its derivative is 0 (a sign, a mask); docs/design.md, "Writing an op".
"""
from .. import backend, ops
from ..ops.generic import astype, broadcast_to, clip, is_array, log, permute, sum_axes, swap_last, tanh
from ..ops.special import Erf, erf_array
from ..tensor import Tensor
from ..tensor import where as tensor_where


def exp(x):
    """exp(x), elementwise."""
    return backend.xp_of(x).exp(x) if is_array(x) else x.exp()


def sqrt(x):
    """sqrt(x), elementwise."""
    return backend.xp_of(x).sqrt(x) if is_array(x) else x.sqrt()


def sigmoid(x):
    """1 / (1 + exp(-x)), elementwise, computed as 0.5 (1 + tanh(x / 2)), which never overflows."""
    return 0.5 * (1 + backend.xp_of(x).tanh(0.5 * x)) if is_array(x) else x.sigmoid()


def erf(x):
    """The error function, elementwise (ops/special.py: to about 1e-15, on either device)."""
    return erf_array(x) if is_array(x) else Erf.apply(x)


def abs(x):
    """|x|, elementwise (its derivative, the sign, is 0 at 0)."""
    return backend.xp_of(x).abs(x) if is_array(x) else x.abs()


def where(cond, a, b):
    """a where cond (a bool array) else b, with broadcasting; a and b arrays, Tensors or numbers."""
    if isinstance(a, Tensor) or isinstance(b, Tensor):
        return tensor_where(cond, a, b)
    return backend.xp_of(cond).where(cond, a, b)


def sum(x, dim=None, keepdim=False):
    """x summed over dim (None: all; an int or a tuple)."""
    return sum_axes(x, ops.normalize_dims(dim, x.ndim), keepdim)


def mean(x, dim=None, keepdim=False):
    """The mean of x over dim (None: all; an int or a tuple)."""
    dims = ops.normalize_dims(dim, x.ndim)
    return x.mean(axis=dims, keepdims=keepdim) if is_array(x) else x.mean(dim=dims, keepdim=keepdim)


def max(x, dim=None, keepdim=False):
    """The largest values of x over dim; as a Tensor, tied maxima share the gradient (Tensor.max)."""
    dims = ops.normalize_dims(dim, x.ndim)
    return x.max(axis=dims, keepdims=keepdim) if is_array(x) else x.max(dim=dims, keepdim=keepdim)


__all__ = ["exp", "log", "sqrt", "sigmoid", "tanh", "erf", "abs", "where", "clip", "sum", "mean", "max", "broadcast_to",
           "permute", "swap_last", "astype", "is_array"]
