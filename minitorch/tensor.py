"""Tensor: an array (NumPy or CuPy) plus the graph node that produced it. The factories are in factories.py, the
free functions (where, cat, ...) in functions.py."""
import itertools
import math
import operator
from collections import namedtuple

import numpy as np

from . import backend, ops
from .core import Value, initial_grad, run_backward
from .core.function import Output
from .core.backward import RETAIN
from .core.versions import bump, write_in_place
from .core.grad_mode import is_grad_enabled
from .core.versions import VersionCounter
from .promotion import result_type, true_division_type

float32, float64 = np.float32, np.float64
int64, bool_ = np.int64, np.bool_


def resolve_dtype(dtype):
    """A NumPy dtype from a dtype, a name ('float32') or an alias (mt.float64); None stays None."""
    if dtype is None:
        return None
    try:
        return np.dtype(dtype)
    except TypeError:
        raise TypeError(f"unknown dtype {dtype!r}; use e.g. 'float32', 'float64', mt.float32") from None


class Tensor(Value):
    """An n-dimensional array that records the ops applied to it, so that backward() can compute gradients.
    Its slots are Value's (core/value.py): the array, the op that made it (its node in the graph), its gradient."""

    __slots__ = ()
    __array_priority__ = 1000  # numpy_array + tensor calls Tensor.__radd__, not NumPy's elementwise loop

    def __init__(self, data, requires_grad=False, dtype=None, device=None):
        self.data = _to_array(data, dtype, device)
        self.grad = self._op = self._cut_by = self._hooks = None
        self._version_counter = VersionCounter()
        self.requires_grad = False
        if requires_grad:
            self.requires_grad_(True)

    @staticmethod
    def _make(array, requires_grad=False):
        """A plain Tensor around array, as is (internal: no dtype conversion, no copy)."""
        t = object.__new__(Tensor)
        t.data, t.requires_grad, t.grad, t._op, t._cut_by, t._hooks, t._version_counter = \
            array, requires_grad, None, None, None, None, VersionCounter()
        return t

    _new = _make   # Value's hook, node._new(array): how the engine makes outputs and gradients (a Parameter's too)

    def _cut(self, array, op, *others):
        """A tensor of array that no gradient flows through, remembering op if self or others had a gradient path."""
        out = Tensor._make(array)
        if is_grad_enabled():
            for t in (self, *others):
                if isinstance(t, Tensor) and (t.requires_grad or t._cut_by):
                    out._cut_by = op if t.requires_grad else t._cut_by
                    break
        return out

    # ----- properties -----
    # The array's own, read through C getters (attrgetter): every op of a step reads them, several times, and a
    # property written as a def would cost a Python call each time. shape is a tuple already (NumPy's and CuPy's).
    shape = property(operator.attrgetter("data.shape"), doc="The shape, a tuple.")
    ndim = property(operator.attrgetter("data.ndim"), doc="The number of dims.")
    dtype = property(operator.attrgetter("data.dtype"), doc="The dtype, a NumPy dtype.")
    out_shape, out_dtype = shape, dtype   # as a graph node (core/value.py): the walk reads an op's and a leaf's alike

    @property
    def device(self):
        return backend.device_of(self.data)

    def size(self, dim=None):
        """The shape (a tuple, standing in for torch.Size), or the length of dim: PyTorch's size(), not NumPy's
        element count (that is numel())."""
        if dim is not None and self.ndim == 0:
            raise IndexError(f"size: dim {dim!r} for a 0-d tensor, which has no dims")
        return self.shape if dim is None else self.shape[_check_dim("size", dim, self.ndim)]

    def dim(self):
        """The number of dims (PyTorch's name for ndim)."""
        return self.data.ndim

    @property
    def is_leaf(self):
        return self._op is None

    @property
    def _version(self):
        """How many in-place changes this tensor's memory has seen (PyTorch's t._version)."""
        return self._version_counter.value

    def numel(self):
        return int(self.data.size)

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __repr__(self):
        grad = ", requires_grad=True" if self.requires_grad else ""
        if self.device == "meta":   # (no values to show: PyTorch's form)
            return f"tensor(..., device='meta', size={self.shape}, dtype={self.dtype}{grad})"
        dev = ", device='cuda'" if self.device == "cuda" else ""
        body = np.array2string(self.numpy(), separator=", ", prefix="tensor(")
        return f"tensor({body}, dtype={self.dtype}{dev}{grad})"

    __hash__ = Value.__hash__  # == is elementwise, so hash by identity like PyTorch (object's, in C: the walk's keys)

    def __array__(self, dtype=None, copy=None):
        """np.asarray(t) for a CPU tensor without grad; for others an error saying what to use (as PyTorch)."""
        if self.requires_grad:
            raise TypeError("a Tensor that requires grad was handed to NumPy (np.exp(t), np.asarray(t), ...), which "
                            "would cut it from the graph: use its methods (t.exp()) or minitorch.ops.array_ops, "
                            "or t.detach().numpy() for the values")
        if self.device != "cpu":
            raise TypeError("a CUDA Tensor was handed to NumPy: use t.cpu() or t.numpy() (a copy on the host)")
        return self.data if dtype is None else self.data.astype(dtype, copy=False)

    # Python's conversions of a one-element tensor (`if loss < best:`, `float(loss)`, `classes[pred.argmax(0)]`), as
    # PyTorch's: each reads the value, from the device for a GPU tensor, so they belong where the user asks for a
    # number, never inside an op or a step's loop
    def __bool__(self):
        if self.data.size != 1:
            count = "no values" if self.data.size == 0 else "more than one value"
            raise RuntimeError(f"Boolean value of Tensor with {count} is ambiguous (shape {self.shape})")
        return bool(self._one_value("bool()"))

    def __int__(self):
        return int(self._one_value("int()"))

    def __float__(self):
        return float(self._one_value("float()"))

    def __index__(self):
        """A one-element integer (or bool) tensor as a list index or a range's bound, as PyTorch's."""
        if self.dtype.kind not in "biu" or self.data.size != 1:
            raise TypeError(f"only integer tensors of a single element can be converted to an index, got shape "
                            f"{self.shape} ({self.dtype})")
        return int(self._one_value("__index__"))

    def _one_value(self, name):
        """The one element as a Python number (ValueError, as PyTorch's, for another count)."""
        if self.data.size != 1:
            raise ValueError(f"{name}: only one element tensors can be converted to Python scalars, got shape "
                             f"{self.shape}")
        return self.item()

    # ----- autograd -----
    def requires_grad_(self, flag=True):
        if flag and self.dtype.kind not in "fc":
            raise TypeError(f"only floating-point tensors can require gradients, got dtype {self.dtype}")
        self.requires_grad = bool(flag)
        return self

    def retain_grad(self):
        """Keep .grad on this non-leaf tensor after backward (leaves always keep theirs)."""
        if self._op is not None:   # kept by the walk after the node's hooks (core/backward.py)
            if self._op._hooks is None:
                self._op._hooks = {}
            self._op._hooks[RETAIN] = self
        return self

    def backward(self, gradient=None, retain_graph=None, create_graph=False):
        """d(self)/d(leaf) added to each leaf's .grad, as torch.Tensor.backward (retain_graph: create_graph's)."""
        run_backward([self], [initial_grad(self, gradient, create_graph)], create_graph if retain_graph is None
                     else retain_graph, create_graph)

    def detach(self):
        """The same data, cut from the graph (and sharing the version counter: an in-place change shows in both)."""
        out = self._cut(self.data, "detach()")
        out._version_counter = self._version_counter
        return out

    def register_hook(self, hook):
        """Call hook(grad) with this tensor's gradient (a Tensor) during backward; a Tensor it returns replaces the
        gradient. On a leaf, before the gradient is added to .grad. Returns a handle whose remove() unregisters it."""
        if not self.requires_grad:
            raise RuntimeError("register_hook: cannot register a hook on a tensor that does not require grad")
        if not callable(hook):
            raise TypeError(f"register_hook: hook must be callable, got {type(hook).__name__}")
        node = self._op or self   # a non-leaf's hooks live on its graph node, as in PyTorch
        if node._hooks is None:
            node._hooks = {}
        handle = RemovableHandle(node._hooks)
        node._hooks[handle.id] = hook
        return handle

    def zero_grad(self):
        self.grad = None

    # ----- in-place ops -----
    # They change the memory and bump the version counter, so that a backward that needs the old values raises
    # instead of using the new ones. As in PyTorch, they are recorded on a tensor in the graph (_record_inplace) and
    # refused on a leaf that requires grad outside no_grad().
    def _inplace(self, name, fn, other=None, recorded=None):
        """fn(self.data, other) in place. In the graph (an operand requires grad, outside no_grad): recorded as
        PyTorch records it, through recorded(self's value, other), the op out of place (zero_, fill_ and copy_
        through _overwritten); refused on a leaf that requires grad, or where an op passes no recorded form."""
        if is_grad_enabled() and (self.requires_grad or (isinstance(other, Tensor) and other.requires_grad)):
            if recorded is not None and not (self.is_leaf and self.requires_grad):
                return self._record_inplace(name, recorded, other)
            kind = "a leaf" if self.is_leaf else "a tensor in the graph"
            raise RuntimeError(f"{name}: an in-place op on {kind} that requires grad (or with such an operand) is not "
                               f"recorded by minitorch: use the out-of-place form (x = x * 2, not x.mul_(2)), or "
                               f"do it inside `with mt.no_grad():` if no gradient should flow through it")
        if isinstance(other, Tensor):
            if other.device != self.device:
                raise RuntimeError(f"{name}: operand on {other.device} for a tensor on {self.device}")
            other = other.data
        elif backend.is_array(other) and backend.device_of(other) != self.device:
            other = backend.to_device(other, self.device)
        self._writable(name)
        try:
            fn(self.data, other)
        except ValueError:
            raise ValueError(f"{name}: an operand of shape {tuple(getattr(other, 'shape', ()))} cannot be "
                             f"broadcast to the tensor's shape {self.shape}") from None
        except TypeError:   # NumPy's casting rule: a float result cannot be written into an integer tensor
            raise TypeError(f"{name}: the result of dtype {backend.xp_of(self.data).result_type(self.data, other)} "
                            f"cannot be written into this tensor of dtype {self.dtype}") from None
        bump((self,))
        return self

    def _record_inplace(self, name, recorded, other):
        """An in-place op on a tensor in the graph, recorded as PyTorch records it: the op is recorded out of place,
        on a copy of the tensor's value (it may save its input, whose memory changes), and the result is written
        into the tensor's memory, which takes the new op as its graph node (core/versions.write_in_place)."""
        self._writable(name)
        earlier = Tensor._make(self.data, self.requires_grad)
        earlier._op, earlier._cut_by, earlier._version_counter = self._op, self._cut_by, self._version_counter
        result = recorded(earlier.clone(), other)
        if result.shape != self.shape or result.dtype != self.dtype:
            raise RuntimeError(f"{name}: the result of shape {result.shape} ({result.dtype}) cannot be written into "
                               f"this tensor of shape {self.shape} ({self.dtype})")
        write_in_place(self, result)
        return self

    def _writable(self, name):
        """Raise unless this tensor's memory may be written (a broadcast view, or a read-only array, may not)."""
        if not getattr(getattr(self.data, "flags", None), "writeable", True):
            raise RuntimeError(f"{name}: this tensor is a read-only view (a broadcast, or a read-only array); "
                               f"change a copy: t = t.clone()")

    def _overwritten(self, value=0.0):
        """self with every element replaced by value, recorded (the gradient to self's old value is 0): the recorded
        form of zero_ and fill_, and the first half of copy_'s."""
        return self.masked_fill(Tensor._make(backend.xp_of(self.data).ones((), dtype=bool)), value)

    def zero_(self):
        """Fill with zeros, in place."""
        return self._inplace("zero_", lambda a, _: a.fill(0), None, lambda t, _: t._overwritten())

    def fill_(self, value):
        """Fill with value, in place."""
        if isinstance(value, Tensor):
            raise TypeError("fill_: value must be a number (copy_ takes a tensor)")
        return self._inplace("fill_", lambda a, v: a.fill(v), value, lambda t, v: t._overwritten(v))

    def copy_(self, src):
        """Copy src's values (broadcast to this tensor's shape) into this tensor, in place."""
        return self._inplace("copy_", lambda a, b: backend.xp_of(a).copyto(a, b, casting="unsafe"), src,
                             lambda t, s: t._overwritten() + (s.to(dtype=t.dtype) if isinstance(s, Tensor) else s))

    def add_(self, other, alpha=1):
        """self += alpha * other, in place."""
        return self._inplace("add_", lambda a, b: a.__iadd__(b if alpha == 1 else alpha * b), other,
                             lambda t, o: t + (o if alpha == 1 else alpha * o))

    def sub_(self, other, alpha=1):
        """self -= alpha * other, in place."""
        return self._inplace("sub_", lambda a, b: a.__isub__(b if alpha == 1 else alpha * b), other,
                             lambda t, o: t - (o if alpha == 1 else alpha * o))

    def mul_(self, other):
        """self *= other, in place."""
        return self._inplace("mul_", lambda a, b: a.__imul__(b), other, lambda t, o: t * o)

    def div_(self, other):
        """self /= other, in place."""
        return self._inplace("div_", lambda a, b: a.__itruediv__(b), other, lambda t, o: t / o)

    # x += y and the like are the in-place ops, as in PyTorch: in place where no graph is recorded (the manual update
    # `with no_grad(): w -= lr * w.grad` changes w itself), recorded on a tensor in the graph, refused on a leaf that
    # requires grad outside no_grad()
    def __iadd__(self, other): return self.add_(other)
    def __isub__(self, other): return self.sub_(other)
    def __imul__(self, other): return self.mul_(other)
    def __itruediv__(self, other): return self.div_(other)

    def clamp_(self, min=None, max=None):
        """Limit to [min, max], in place (either bound may be None)."""
        _check_bounds("clamp_", min, max)
        return self._inplace("clamp_", lambda a, _: backend.xp_of(a).clip(a, min, max, out=a), None,
                             lambda t, _: t.clamp(min, max))

    # ----- conversion -----
    def numpy(self):
        """A NumPy array on the host (a copy for GPU tensors; the same memory for CPU tensors)."""
        return backend.to_numpy(self.data)

    def item(self):
        if self.data.size != 1:
            raise ValueError(f"item() needs a tensor with one element, this one has shape {self.shape}")
        return self.data.item()

    def tolist(self):
        return backend.to_numpy(backend.to_device(self.data, "cpu")).tolist()   # (a meta tensor: PyTorch's error)

    def to(self, device=None, dtype=None):
        """Move to a device ('cpu'/'cuda') and/or convert dtype; differentiable."""
        out = self
        if device is not None and backend.check_device(device) != self.device:
            out = ops.ToDevice.apply(out, device=backend.check_device(device))
        if dtype is not None and resolve_dtype(dtype) != self.dtype:
            out = ops.Cast.apply(out, dtype=resolve_dtype(dtype))
        return out

    def clone(self):
        """A copy of the data, recorded in the graph (its gradient passes through unchanged)."""
        return ops.Cast.apply(self, dtype=self.dtype)

    def float(self):
        return self.to(dtype=np.float32)

    def double(self):
        return self.to(dtype=np.float64)

    def half(self):
        """float16 values, differentiable (the gradient comes back in this tensor's dtype)."""
        return self.to(dtype=np.float16)

    def long(self):
        """int64 values (truncated); not differentiable."""
        return self._cut(self.data.astype(np.int64), "long()")

    def cpu(self):
        return self.to("cpu")

    def cuda(self):
        return self.to("cuda")

    # ----- arithmetic -----
    def _binary(self, fn, other, reverse=False):
        if not isinstance(other, Tensor) or other.data.dtype != self.data.dtype or self.data.dtype.kind != "f":
            return promoted_binary(fn, self, other, reverse)   # numbers, arrays, two dtypes: PyTorch's promotion
        try:
            return fn.apply(other, self) if reverse else fn.apply(self, other)
        except ValueError as e:
            raise _broadcast_error(fn.__name__, self, other, e) from None

    def __add__(self, other): return self._binary(ops.Add, other)
    def __radd__(self, other): return self._binary(ops.Add, other, reverse=True)
    def __sub__(self, other): return self._binary(ops.Sub, other)
    def __rsub__(self, other): return self._binary(ops.Sub, other, reverse=True)
    def __mul__(self, other): return self._binary(ops.Mul, other)
    def __rmul__(self, other): return self._binary(ops.Mul, other, reverse=True)
    def __truediv__(self, other): return self._binary(ops.Div, other)
    def __rtruediv__(self, other): return self._binary(ops.Div, other, reverse=True)
    def __pow__(self, other): return self._binary(ops.Pow, other)
    def __rpow__(self, other): return self._binary(ops.Pow, other, reverse=True)
    def __matmul__(self, other): return self._binary(ops.MatMul, other)
    def __rmatmul__(self, other): return self._binary(ops.MatMul, other, reverse=True)
    def __neg__(self): return ops.Neg.apply(self)

    # comparisons give bool tensors that are not part of the graph
    def _compare(self, other, fn, op):
        if isinstance(other, np.generic):
            other = other.item()
        dtype = result_type(self, other)   # compared in the promoted dtype, as PyTorch (int64 < float32 in float32)
        array = backend.array_of(other)
        array = array.astype(dtype) if backend.is_array(array) and array.dtype != dtype else array
        try:
            return self._cut(fn(self.data if self.dtype == dtype else self.data.astype(dtype), array),
                             f"a comparison ({op})", other)
        except ValueError:
            other_shape = other.shape if isinstance(other, Tensor) else np.shape(other)
            raise ValueError(f"{op}: shapes {self.shape} and {tuple(other_shape)} cannot be broadcast "
                             f"together") from None

    def __lt__(self, other): return self._compare(other, lambda a, b: a < b, "<")
    def __le__(self, other): return self._compare(other, lambda a, b: a <= b, "<=")
    def __gt__(self, other): return self._compare(other, lambda a, b: a > b, ">")
    def __ge__(self, other): return self._compare(other, lambda a, b: a >= b, ">=")
    def __eq__(self, other): return self._compare(other, lambda a, b: a == b, "==")
    def __ne__(self, other): return self._compare(other, lambda a, b: a != b, "!=")

    def __invert__(self):
        if self.dtype != np.bool_:
            raise TypeError(f"~ needs a bool tensor, got dtype {self.dtype}")
        return self._cut(~self.data, "~")

    def __and__(self, other): return self._compare(other, lambda a, b: a & b, "&")
    def __or__(self, other): return self._compare(other, lambda a, b: a | b, "|")

    # ----- elementwise functions -----
    def exp(self): return ops.Exp.apply(self)
    def log(self): return ops.Log.apply(self)
    def sqrt(self): return ops.Sqrt.apply(self)
    def tanh(self): return ops.Tanh.apply(self)
    def sigmoid(self): return ops.Sigmoid.apply(self)
    def relu(self): return ops.Relu.apply(self)
    def gelu(self): return ops.Gelu.apply(self)
    def abs(self): return ops.Abs.apply(self)
    def erf(self): return ops.Erf.apply(self)

    def round(self, decimals=0):
        """Rounded to `decimals` places, halves to even (as PyTorch). Not differentiable: PyTorch's gradient of round
        is zero everywhere, so here the result carries none (a backward through it alone names round())."""
        if not isinstance(decimals, (int, np.integer)) or isinstance(decimals, bool):
            raise TypeError(f"round: decimals must be an int, got {decimals!r}")
        return self._cut(backend.xp_of(self.data).round(self.data, decimals), "round()")

    def clamp(self, min=None, max=None):
        """Values limited to [min, max] (numbers or tensors; either may be None). As in PyTorch the gradient is 1
        where min <= x <= max, bounds included, and 0 outside."""
        _check_bounds("clamp", min, max)
        out = self
        if min is not None:
            out = where_op(out < min, min, out)
        if max is not None:
            out = where_op(out > max, max, out)
        return out

    clip = clamp

    def masked_fill(self, mask, value):
        """Replace the elements where mask (bool, broadcastable to self) is True by value."""
        # as a Tensor, the mask goes through apply's device check
        mask = mask if isinstance(mask, Tensor) else Tensor._make(mask if backend.is_array(mask) else np.asarray(mask))
        if mask.dtype != np.bool_:
            raise TypeError(f"masked_fill: mask must be a bool tensor, got dtype {mask.dtype}")
        if not ops.array_ops.broadcasts_to(tuple(mask.shape), self.shape):
            raise ValueError(f"masked_fill: mask of shape {mask.shape} does not broadcast to the tensor's "
                             f"shape {self.shape}")
        return ops.MaskedFill.apply(self, mask, value=value)

    # ----- reductions -----
    def sum(self, dim=None, keepdim=False, *, axis=None, keepdims=False):
        """The sum over dim (an int, a tuple, or None: all). NumPy's axis and keepdims are taken too, so that a
        backward formula reads the same on an array and on a Tensor (create_graph)."""
        return ops.Sum.apply(self, dim=dim if axis is None else axis, keepdim=keepdim or keepdims)

    def mean(self, dim=None, keepdim=False): return ops.Mean.apply(self, dim=dim, keepdim=keepdim)

    def amax(self, dim=None, keepdim=False):
        """The maximum values over one dim, several (a tuple) or all (None); ties share the gradient equally."""
        return ops.Max.apply(self, dim=dim, keepdim=keepdim)

    def amin(self, dim=None, keepdim=False):
        """The minimum values over one dim, several (a tuple) or all (None); ties share the gradient equally."""
        return ops.Min.apply(self, dim=dim, keepdim=keepdim)

    def norm(self, p="fro", dim=None, keepdim=False):
        """The p-norm over dim (an int, a tuple or None: all), as torch.Tensor.norm: 'fro' and 2 the 2-norm (its
        gradient 0 where the norm is 0, as PyTorch's), 1 the sum of |x|, inf / -inf the largest / smallest |x|, 0
        the count of non-zeros, another number (sum |x|^p)^(1/p); no 'nuc'."""
        if self.data.dtype.kind not in "fc":
            raise RuntimeError(f"norm: expected a floating point tensor as input, got {self.dtype}")
        if p in ("fro", 2):
            return ops.Norm.apply(self, dim=dim, keepdim=keepdim)
        if isinstance(p, bool) or not isinstance(p, (int, float)):
            raise RuntimeError(f"norm: order {p!r} is not supported here (a number, 'fro'; no 'nuc')")
        if p == 0:
            return (self != 0).to(dtype=self.dtype).sum(dim=dim, keepdim=keepdim)
        if p == 1:
            return self.abs().sum(dim=dim, keepdim=keepdim)
        if math.isinf(p):
            return self.abs().amax(dim=dim, keepdim=keepdim) if p > 0 else self.abs().amin(dim=dim, keepdim=keepdim)
        return (self.abs() ** p).sum(dim=dim, keepdim=keepdim) ** (1.0 / p)

    def max(self, dim=None, keepdim=False):
        """As PyTorch: max() is the largest value (a 0-d tensor; ties share the gradient); max(dim) is the namedtuple
        (values, indices) of the maxima along dim and where they are (the first one of ties), and the gradient of
        values goes to those indices, as PyTorch's; max(other), a tensor, is mt.maximum. Several dims: amax(dims)."""
        return self._extreme("max", ops.Max, dim, keepdim)

    def min(self, dim=None, keepdim=False):
        """As max, for the smallest: min(), min(dim) -> (values, indices), min(other) (mt.minimum)."""
        return self._extreme("min", ops.Min, dim, keepdim)

    def _extreme(self, name, op, dim, keepdim):
        """max or min (name; op the reduction of all dims) in each of PyTorch's three forms."""
        if dim is None:
            return op.apply(self)
        if isinstance(dim, Tensor):   # torch.max(a, b): the elementwise form, with promotion
            which = ops.Maximum if op is ops.Max else ops.Minimum
            return which.apply(*promoted(which, self, dim)[:2])
        d, result = _check_dim(name, dim, self.ndim), MaxResult if name == "max" else MinResult
        if self.ndim == 0:
            return result(self.clone(), self._cut(backend.xp_of(self.data).zeros((), np.int64), f"{name}()"))
        indices = self._arg_extreme(name, d, keepdim=True)
        xp = backend.xp_of(self.data)
        index = tuple(indices.data if i == d else xp.arange(n).reshape((-1,) + (1,) * (self.ndim - i - 1))
                      for i, n in enumerate(self.shape))
        values = self[index]       # a gather: its backward puts the whole gradient at the index, as PyTorch
        if not keepdim:
            values, indices = values.squeeze(d), indices.squeeze(d)
        return result(values, indices)

    def mm(self, mat2):
        """self (n, m) @ mat2 (m, p): two matrices, no broadcasting (torch.mm; matmul broadcasts)."""
        for name, t in (("input", self), ("mat2", mat2)):
            if not isinstance(t, Tensor) or t.ndim != 2:
                raise RuntimeError(f"mm: {name} must be a 2-D Tensor, got "
                                   + (f"shape {t.shape}" if isinstance(t, Tensor) else type(t).__name__))
        if self.shape[1] != mat2.shape[0]:
            raise RuntimeError(f"mm: shapes {self.shape} and {mat2.shape} cannot be multiplied")
        return self @ mat2

    def argmax(self, dim=None, keepdim=False):
        """Indices of the maxima (the first of ties; not differentiable)."""
        return self._arg_extreme("argmax", dim, keepdim)

    def argmin(self, dim=None, keepdim=False):
        """Indices of the minima (the first of ties; not differentiable)."""
        return self._arg_extreme("argmin", dim, keepdim)

    def _arg_extreme(self, name, dim, keepdim):
        """argmax or argmin (by name; "max" and "min" too) over dim (None: of the flattened tensor)."""
        if dim is not None and not isinstance(dim, int):
            raise TypeError(f"{name}: dim must be an int or None, got {dim!r}")
        if dim is not None and not -max(self.ndim, 1) <= dim < max(self.ndim, 1):
            raise IndexError(f"{name}: dim {dim} is out of range for a tensor of shape {self.shape}")
        ops.check_not_empty(name, self.shape, dim, ops.normalize_dims(dim, self.ndim), whole=IndexError)
        find = self.data.argmax if name.endswith("max") else self.data.argmin
        return self._cut(find(axis=dim, keepdims=keepdim), name)

    # ----- shape -----
    def reshape(self, *shape):
        shape = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        return ops.Reshape.apply(self, shape=tuple(shape))

    view = reshape

    def expand(self, *shape):
        """A view repeated along size-1 and new leading dims to `shape` (torch.Tensor.expand; -1 keeps a dim)."""
        shape = tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        lead = len(shape) - self.ndim
        shape = tuple(n if n != -1 else self.shape[i - lead] for i, n in enumerate(shape))
        return ops.Expand.apply(self, shape=shape)

    def where(self, condition, other):
        """self where condition else other (torch.Tensor.where)."""
        return where_op(condition, self, other)

    def permute(self, *dims):
        dims = dims[0] if len(dims) == 1 and isinstance(dims[0], (tuple, list)) else dims
        return ops.Permute.apply(self, dims=tuple(dims))

    def transpose(self, dim0, dim1):
        for d in (dim0, dim1):
            if not -self.ndim <= d < self.ndim:
                raise IndexError(f"transpose: dim {d} is out of range for a tensor of shape {self.shape}")
        dims = list(range(self.ndim))
        dims[dim0], dims[dim1] = dims[dim1], dims[dim0]
        return ops.Permute.apply(self, dims=tuple(dims))

    def t(self):
        """The transpose of a 2-D tensor (0-D and 1-D tensors are returned as they are), as torch.Tensor.t."""
        if self.ndim > 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 dims, got shape {self.shape}; use transpose(d0, d1)")
        return self.T if self.ndim == 2 else self

    @property
    def T(self):
        """All dims reversed (the matrix transpose for 2-D)."""
        return ops.Permute.apply(self, dims=tuple(range(self.ndim))[::-1])

    def flatten(self, start_dim=0, end_dim=-1):
        """Dims start_dim..end_dim merged into one (torch.flatten; flatten(1) keeps the batch dim)."""
        n = self.ndim
        if n == 0:
            return self.reshape(1)
        start, end = start_dim % n, end_dim % n
        if start > end:
            raise RuntimeError(f"flatten() has invalid args: start_dim {start_dim} cannot come after end_dim {end_dim}")
        return self.reshape(self.shape[:start] + (math.prod(self.shape[start:end + 1]),) + self.shape[end + 1:])

    def unsqueeze(self, dim):
        if not -self.ndim - 1 <= dim <= self.ndim:
            raise IndexError(f"unsqueeze: dim {dim} is out of range for a tensor of shape {self.shape} "
                             f"(allowed: {-self.ndim - 1} to {self.ndim})")
        dim = dim if dim >= 0 else dim + self.ndim + 1
        return self.reshape(self.shape[:dim] + (1,) + self.shape[dim:])

    def squeeze(self, dim=None):
        if dim is None:
            return self.reshape(tuple(n for n in self.shape if n != 1))
        dims = ops.normalize_dims(dim, self.ndim)
        return self.reshape(tuple(n for i, n in enumerate(self.shape) if not (i in dims and n == 1)))

    # ----- PyTorch's conveniences, composed of the ops above (no backward of their own) -----
    def narrow(self, dim, start, length):
        """self's entries start .. start + length - 1 along dim (a view, as torch.narrow)."""
        d = _check_dim("narrow", dim, self.ndim)
        if not 0 <= (start + self.shape[d] if start < 0 else start) <= self.shape[d] - length or length < 0:
            raise IndexError(f"narrow: start {start} and length {length} are out of range for dim {dim} "
                             f"of size {self.shape[d]}")
        start = start + self.shape[d] if start < 0 else start
        return self[(slice(None),) * d + (slice(start, start + length),)]

    def split(self, split_size_or_sections, dim=0):
        """Pieces along dim: each of split_size (the last one shorter) or of the listed sizes (torch.split)."""
        d = _check_dim("split", dim, self.ndim)
        n = self.shape[d]
        if isinstance(split_size_or_sections, int):
            if split_size_or_sections <= 0:
                raise ValueError(f"split: split_size must be positive, got {split_size_or_sections}")
            sizes = [min(split_size_or_sections, n - i) for i in range(0, n, split_size_or_sections)] or [0]
        else:
            sizes = list(split_size_or_sections)
            if sum(sizes) != n:
                raise RuntimeError(f"split: sizes {sizes} sum to {sum(sizes)}, not to dim {dim}'s size {n}")
        starts = np.cumsum([0] + sizes[:-1])
        return tuple(self.narrow(d, int(start), size) for start, size in zip(starts, sizes))

    def chunk(self, chunks, dim=0):
        """At most `chunks` pieces of equal size along dim (the last one shorter), as torch.chunk."""
        if chunks <= 0:
            raise RuntimeError(f"chunk: chunks must be positive, got {chunks}")
        n = self.shape[_check_dim("chunk", dim, self.ndim)]
        return self.split(max(-(-n // chunks), 1), dim)

    def view_as(self, other): return self.reshape(other.shape)
    def reshape_as(self, other): return self.reshape(other.shape)
    def expand_as(self, other): return self.expand(*other.shape)

    def contiguous(self):
        """self when its array is laid out row by row already, else a copy that is (torch's contiguous)."""
        return self if self.data.flags.c_contiguous else self.clone()

    def new_zeros(self, *size, dtype=None, device=None, requires_grad=False):
        """Zeros of the given size with self's dtype and device unless given (torch's Tensor.new_zeros)."""
        return self.new_full(size, 0, dtype=dtype, device=device, requires_grad=requires_grad)

    def new_ones(self, *size, dtype=None, device=None, requires_grad=False):
        return self.new_full(size, 1, dtype=dtype, device=device, requires_grad=requires_grad)

    def new_full(self, size, fill_value, dtype=None, device=None, requires_grad=False):
        size = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else tuple(size)
        xp = backend.xp_of_device(backend.check_device(device)) if device is not None else backend.xp_of(self.data)
        t = Tensor._make(xp.full(size, fill_value, dtype=resolve_dtype(dtype) or self.dtype))
        return t.requires_grad_(True) if requires_grad else t

    def eq(self, other): return self == other
    def ne(self, other): return self != other
    def lt(self, other): return self < other
    def le(self, other): return self <= other
    def gt(self, other): return self > other
    def ge(self, other): return self >= other

    def all(self, dim=None, keepdim=False):
        """Whether every entry (along dim) is nonzero: a bool tensor (not differentiable)."""
        return self._cut(self.data.all(axis=dim, keepdims=keepdim), "all")

    def any(self, dim=None, keepdim=False):
        """Whether some entry (along dim) is nonzero: a bool tensor (not differentiable)."""
        return self._cut(self.data.any(axis=dim, keepdims=keepdim), "any")

    def __format__(self, format_spec):
        """f"{t:.2f}" for a 0-d tensor formats its value, as PyTorch; other tensors take only an empty spec."""
        return format(self.item(), format_spec) if self.ndim == 0 else object.__format__(self, format_spec)

    # In-place shape changes, as PyTorch's: the tensor becomes a view of its memory in the new shape. They count as
    # in-place changes (the version counter: an op that saved the tensor refuses to backward) and, in the graph, the
    # view op becomes the tensor's node; refused on a leaf that requires grad outside no_grad(), as in PyTorch.
    def unsqueeze_(self, dim):
        """unsqueeze(dim), in place."""
        return self._reshaped_in_place("unsqueeze_", lambda t: t.unsqueeze(dim))

    def squeeze_(self, dim=None):
        """squeeze(dim), in place (every size-1 dim where dim is None)."""
        return self._reshaped_in_place("squeeze_", lambda t: t.squeeze(dim))

    def transpose_(self, dim0, dim1):
        """transpose(dim0, dim1), in place."""
        return self._reshaped_in_place("transpose_", lambda t: t.transpose(dim0, dim1))

    def t_(self):
        """t(), in place (a tensor of at most 2 dims)."""
        if self.ndim > 2:
            raise RuntimeError(f"t_() expects a tensor with <= 2 dims, got shape {self.shape}; use transpose_(d0, d1)")
        return self._reshaped_in_place("t_", lambda t: t.T)

    def _reshaped_in_place(self, name, view):
        """self takes the shape (and memory, a view) of view(self): the in-place form of a view op."""
        if self.requires_grad and self.is_leaf and is_grad_enabled():
            raise RuntimeError(f"{name}: a leaf Variable that requires grad is being used in an in-place operation; "
                               f"use the out-of-place form (x = x.{name[:-1]}(...)) or do it inside "
                               f"`with mt.no_grad():`")
        if self._op is not None and not is_grad_enabled():   # (PyTorch keeps the old node: a gradient of another shape)
            raise RuntimeError(f"{name} inside no_grad() on a tensor in the graph: its node would get gradients of "
                               f"the new shape; do it outside no_grad(), or on a detached copy (y = y.detach())")
        out = view(self)
        self.data, self._cut_by = out.data, out._cut_by
        if out._op is not None:   # recorded: the view op is this tensor's node now, its output this tensor's memory
            self._op, out._op.out_counter = out._op, self._version_counter
        bump((self,))
        return self

    def __getitem__(self, index):
        return ops.GetItem.apply(self, index=self._index(index, "getitem"))

    def __setitem__(self, index, value):
        """t[index] = value, in place (a number, or a tensor broadcast to the indexed part). In the graph it is
        recorded as PyTorch records it: the indexed elements take the value, whose gradient there is 0 to the old
        ones; a value that itself requires grad is refused (build the result with mt.where or mt.cat instead)."""
        if isinstance(value, Tensor) and value.requires_grad and is_grad_enabled():
            raise RuntimeError("t[index] = value: minitorch does not record a value that requires grad written into "
                               "a tensor; build the result out of place, with mt.where(mask, value, t) or mt.cat")
        index = self._index(index, "setitem")
        value = backend.array_of(value)
        self._inplace("setitem", lambda a, v: a.__setitem__(index, v), value, lambda t, v: t._written_at(index, v))

    def _written_at(self, index, value):
        """self with self[index] = value, out of place (the recorded form of __setitem__)."""
        xp = backend.xp_of(self.data)
        where, patch = xp.zeros(self.shape, dtype=bool), xp.zeros(self.shape, dtype=self.dtype)
        where[index], patch[index] = True, value
        return where_op(Tensor._make(where), Tensor._make(patch), self)

    def _index(self, index, name):
        """An index for the array: Tensors as their arrays (on this tensor's device), lists as arrays."""
        for part in index if isinstance(index, tuple) else (index,):
            if isinstance(part, Tensor) and part.device != self.device:
                raise RuntimeError(f"{name}: an index on {part.device} for a tensor on {self.device}; "
                                   f"move it with .to(device) first")
        if isinstance(index, tuple):
            index = tuple(backend.array_of(i) for i in index)
        elif isinstance(index, Tensor):
            index = index.data
        if isinstance(index, list):
            index = np.asarray(index) if backend.device_of(self.data) == "cpu" else backend.to_device(index, "cuda")
        return index

    # ----- PyTorch's method forms of its everyday functions -----
    def pow(self, exponent): return self ** exponent
    def matmul(self, other): return self @ other
    def add(self, other, alpha=1): return self + (other if alpha == 1 else alpha * other)
    def sub(self, other, alpha=1): return self - (other if alpha == 1 else alpha * other)
    def mul(self, other): return self * other
    def div(self, other): return self / other
    def square(self): return self * self
    def sin(self): return ops.Sin.apply(self)
    def cos(self): return ops.Cos.apply(self)

    @property
    def grad_fn(self):
        """The op that made this tensor (its node in the graph), None for a leaf, as torch.Tensor.grad_fn (for one of
        an op's several outputs, that op, as PyTorch's; the engine's node for it is an Output)."""
        op = self._op
        return op.parents[0] if type(op) is Output else op

    def type(self, dtype=None):
        """The dtype's name without an argument; with one, the tensor in that dtype (torch.Tensor.type)."""
        return str(self.dtype) if dtype is None else self.to(dtype=dtype)


MaxResult = namedtuple("max", "values indices")   # what max(dim) returns (torch.return_types.max)
MinResult = namedtuple("min", "values indices")   # and min(dim) (torch.return_types.min)


def _check_dim(name, dim, ndim):
    """dim as a non-negative int for a tensor of ndim dims (a 0-d tensor takes 0 and -1, as PyTorch)."""
    if not isinstance(dim, (int, np.integer)) or isinstance(dim, bool):
        raise TypeError(f"{name}: dim must be an int, got {dim!r}" + (
            f"; a{name} takes several dims, and {name}(other) with a Tensor is the elementwise {name}"
            if name in ("max", "min") else ""))
    if not -max(ndim, 1) <= dim < max(ndim, 1):
        raise IndexError(f"{name}: dim {dim} is out of range for a tensor of {ndim} dims")
    return int(dim) % max(ndim, 1)


class RemovableHandle:
    """What register_hook returns: remove() unregisters the hook (torch.utils.hooks.RemovableHandle)."""
    _ids = itertools.count()

    def __init__(self, hooks):
        self.hooks, self.id = hooks, next(RemovableHandle._ids)

    def remove(self):
        self.hooks.pop(self.id, None)


def _broadcast_error(name, a, b, error):
    """NumPy's broadcasting error, said with the op's name and both shapes; any other error as it is."""
    if "broadcast" not in str(error):
        return error
    shapes = [tuple(x.shape if isinstance(x, Tensor) else np.shape(x)) for x in (a, b)]
    return ValueError(f"{name}: shapes {shapes[0]} and {shapes[1]} cannot be broadcast together")


def _check_bounds(name, low, high):
    if low is None and high is None:
        raise ValueError(f"{name}: at least one of min and max must be given")


def _to_array(data, dtype, device):
    """Convert user data to a backend array. Python and NumPy floats become float32 unless dtype says otherwise."""
    dtype = resolve_dtype(dtype)
    if isinstance(data, Tensor):
        data = data.data
    if not backend.is_array(data):
        data = np.asarray(data)
    for kind in (data.dtype, dtype):
        if kind is not None and kind.kind not in "biufc":   # strings, objects, dates: NumPy would fail later
            raise TypeError(f"tensor: dtype {kind} (strings, objects, ...) cannot make a tensor; a tensor holds "
                            f"numbers or bools")
    if dtype is None and data.dtype.kind == "f" and data.dtype != np.float32:
        dtype = np.float32
    xp = backend.xp_of(data)
    if device is not None:
        device = backend.check_device(device)
        data = backend.to_device(data, device)
        xp = backend.xp_of_device(device)
    return xp.array(data, dtype=dtype, copy=True)


def promoted_binary(fn, tensor, other, reverse):
    """tensor (fn) other, or other (fn) tensor where reverse, with PyTorch's promotion deciding the dtype (none for
    matmul, which wants one dtype, as PyTorch's)."""
    if not isinstance(other, Tensor):   # an array becomes a Tensor, a NumPy scalar a number (float32 stays so)
        other = Tensor._make(other) if backend.is_array(other) else other.item() if isinstance(other, np.generic) \
            else other
    a, b, dtype = (other, tensor, None) if reverse else (tensor, other, None)
    if fn is not ops.MatMul:
        a, b, dtype = promoted(fn, a, b)
    try:
        out = fn.apply(a, b)
    except ValueError as e:
        raise _broadcast_error(fn.__name__, tensor, other, e) from None
    return out if dtype is None or out.dtype == dtype else out.to(dtype=dtype)   # (NumPy's bool ** True is int8)


def promoted(op, a, b):
    """(a, b, dtype): a and b in the dtype op computes in, by PyTorch's promotion (promotion.py); Tensors converted
    through Cast, so that the gradient flows back to each in its own dtype; numbers stay numbers (NumPy keeps the
    array's dtype).
    Subtraction refuses bool operands and pow a bool to a bool tensor's power, as PyTorch does."""
    a_tensor, b_tensor = isinstance(a, Tensor), isinstance(b, Tensor)
    if a_tensor and b_tensor and a.dtype == b.dtype and op is not ops.Div and a.dtype != np.bool_:
        return a, b, a.dtype    # the everyday case, decided without the rule
    tensor, number = (a, b) if a_tensor else (b, a)
    if type(number) in (float, int) and tensor.dtype.kind == "f":   # the other everyday case: x * 0.5, x + 1
        return a, b, tensor.dtype
    dtype = true_division_type(a, b) if op is ops.Div else result_type(a, b)
    if op is ops.Sub and any(isinstance(x, bool) or isinstance(x, Tensor) and x.dtype == np.bool_ for x in (a, b)):
        raise TypeError("Subtraction, the `-` operator, with a bool tensor is not supported (as in PyTorch); "
                        "use the `~` or logical_not() operator instead")
    if dtype == np.bool_ and op is ops.Pow and b_tensor:
        raise TypeError("pow: not implemented for a bool base to a bool tensor's power (as in PyTorch)")
    return (*(x.to(dtype=dtype) if isinstance(x, Tensor) and x.dtype != dtype else x for x in (a, b)), dtype)


def where_op(cond, a, b):
    """a where cond else b (cond a bool Tensor or array; a, b Tensors or numbers), broadcasting: the one place that
    checks where's arguments (Tensor.where, clamp and functions.where)."""
    cond = cond if isinstance(cond, Tensor) else Tensor._make(cond if backend.is_array(cond) else np.asarray(cond))
    if cond.dtype != np.bool_:
        raise TypeError(f"where: cond must be a bool tensor, got dtype {cond.dtype}")
    try:
        if isinstance(a, Tensor) or isinstance(b, Tensor):
            a, b, _ = promoted(ops.Where, a, b)
        return ops.Where.apply(cond, a, b)
    except ValueError:
        shapes = [tuple(getattr(x, "shape", ())) for x in (cond, a, b)]
        raise ValueError(f"where: shapes {shapes} cannot be broadcast together") from None


__all__ = ["Tensor", "float32", "float64", "int64", "bool_", "resolve_dtype"]
