"""The meta device: arrays that have a shape and a dtype and no values (PyTorch's device="meta"), for reasoning about
shapes: a model's forward on a meta input gives every output's shape and dtype without memory or arithmetic.

A `MetaArray` stands where a NumPy array would, so that every op runs its own code on it unchanged: NumPy hands a
ufunc or a function called on one to it (`__array_ufunc__`, `__array_function__`), and `backend.xp_of` gives ops this
module's `xp`, whose factories make MetaArrays. Each result's shape and dtype come from one of two places:
- a rule written here: elementwise ufuncs (broadcast shapes; the dtype from NumPy on one-element arrays), reductions,
  matmul, einsum, where, concatenate, stack, reshape, astype and the factories: no element is touched;
- otherwise NumPy on a zero-stride stand-in of each MetaArray (`np.broadcast_to` of one zero: no memory): a view
  (transpose, basic indexing, moveaxis) costs nothing, a function that makes a new array (an integer-array index, a
  function without a rule here) allocates its output while it runs, and the result keeps only its shape and dtype.
Values are refused as PyTorch refuses them: a meta array has none to read (item, numpy, bool), and a mask's
indexing, whose shape depends on values, is refused.
"""
import math
import types

import numpy as np

NO_VALUES = "Tensor.item() cannot be called on meta tensors"   # PyTorch's words for any read of a value


class MetaArray:
    """A shape and a dtype, with NumPy's array interface; no memory."""
    __slots__ = ("shape", "dtype")
    base = None                 # (a view of nothing: versions.same_buffer)

    def __init__(self, shape, dtype=np.float64):
        self.shape, self.dtype = tuple(int(n) for n in shape), np.dtype(dtype)

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: math.prod(self.shape))
    itemsize = property(lambda self: self.dtype.itemsize)
    nbytes = property(lambda self: self.size * self.dtype.itemsize)   # what it would hold (PyTorch's nbytes)
    T = property(lambda self: self.transpose())

    def __repr__(self):
        return f"MetaArray(shape={self.shape}, dtype={self.dtype})"

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    # ----- no values -----
    def _no_values(self, *args, **kwargs):
        raise RuntimeError(NO_VALUES)

    __bool__ = __float__ = __int__ = __index__ = item = tolist = _no_values

    def __array__(self, dtype=None, copy=None):
        raise TypeError("can't convert a meta tensor to NumPy: it has a shape and a dtype, no values")

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    # ----- what the rules give without touching an element -----
    def astype(self, dtype, copy=True, **kwargs):
        return MetaArray(self.shape, dtype)

    def copy(self, order="C"):
        return MetaArray(self.shape, self.dtype)

    def reshape(self, *shape, order="C"):
        shape = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        return MetaArray(_resolve_shape(self.size, shape), self.dtype)

    def fill(self, value):
        return None

    def __setitem__(self, index, value):
        return None   # a write changes neither shape nor dtype: nothing to do

    def _reduce(self, name, axis=None, dtype=None, keepdims=False, **kwargs):
        """The shape of a reduction over axis, and its dtype from NumPy on one element."""
        axes = tuple(range(self.ndim)) if axis is None else tuple(a % max(self.ndim, 1) for a in np.atleast_1d(axis))
        shape = tuple(1 if i in axes else n for i, n in enumerate(self.shape) if keepdims or i not in axes)
        one = getattr(np.ones((1,) * self.ndim, self.dtype), name)(**({"dtype": dtype} if dtype else {}))
        return MetaArray(shape, np.result_type(one))

    def sum(self, axis=None, dtype=None, out=None, keepdims=False, **kwargs):
        return self._reduce("sum", axis, dtype, keepdims)

    def mean(self, axis=None, dtype=None, out=None, keepdims=False, **kwargs):
        return self._reduce("mean", axis, dtype, keepdims)

    def max(self, axis=None, out=None, keepdims=False, **kwargs):
        return self._reduce("max", axis, None, keepdims)

    def min(self, axis=None, out=None, keepdims=False, **kwargs):
        return self._reduce("min", axis, None, keepdims)

    def argmax(self, axis=None, out=None, keepdims=False):
        return self._reduce("argmax", axis, None, keepdims)

    def argmin(self, axis=None, out=None, keepdims=False):
        return self._reduce("argmin", axis, None, keepdims)

    def any(self, axis=None, out=None, keepdims=False):
        return self._reduce("any", axis, None, keepdims)

    def all(self, axis=None, out=None, keepdims=False):
        return self._reduce("all", axis, None, keepdims)

    # ----- what NumPy gives on stand-ins (views: no memory) -----
    def __getitem__(self, index):
        for part in index if isinstance(index, tuple) else (index,):
            if isinstance(part, MetaArray) and part.dtype == np.bool_:
                raise NotImplementedError("indexing with a meta bool mask: the result's shape depends on the mask's "
                                          "values, which a meta tensor does not have")
        return on_stand_ins(lambda a, i: a[i], self, index)

    def __getattr__(self, name):   # transpose, swapaxes, squeeze, clip, ...: NumPy's method on a stand-in
        if name.startswith("__"):
            raise AttributeError(name)
        method = getattr(np.ndarray, name)
        if not callable(method):   # (flags, strides, ...: a meta array has no memory to describe)
            raise AttributeError(name)
        return lambda *args, **kwargs: on_stand_ins(lambda a, *r, **k: method(a, *r, **k), self, *args, **kwargs)

    # ----- NumPy's protocols -----
    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
        if method == "at":   # np.add.at(target, ...): a write, nothing to compute
            return None
        if method == "reduce":
            array, = inputs
            name = {np.add: "sum", np.maximum: "max", np.minimum: "min", np.logical_or: "any",
                    np.logical_and: "all"}.get(ufunc)
            if name is None or not isinstance(array, MetaArray):
                return NotImplemented
            result = array._reduce(name, kwargs.get("axis", 0), kwargs.get("dtype"), kwargs.get("keepdims", False))
        elif method != "__call__":
            return NotImplemented
        else:
            shapes = [np.shape(x) if not isinstance(x, MetaArray) else x.shape for x in inputs]
            shape = matmul_shape(*shapes) if ufunc is np.matmul else np.broadcast_shapes(*shapes)
            operands = [_probe(x) if not ufunc.signature or not hasattr(x, "dtype") else np.ones((1, 1), x.dtype)
                        for x in inputs]   # (matmul's core dims)
            with np.errstate(all="ignore"):   # (one-element arrays of ones: the dtype NumPy's loop gives)
                probe = ufunc(*operands, **kwargs)
            result = tuple(MetaArray(shape, p.dtype) for p in probe) if ufunc.nout > 1 else \
                MetaArray(shape, np.result_type(probe))
        if out is not None:   # in place (a += b): the output keeps its shape
            target = out[0] if isinstance(out, tuple) else out
            if isinstance(target, MetaArray) and np.broadcast_shapes(result.shape, target.shape) != target.shape:
                raise ValueError(f"non-broadcastable output operand with shape {target.shape} doesn't match the "
                                 f"broadcast shape {result.shape}")
            return target
        return result

    def __array_function__(self, func, types_, args, kwargs):
        rule = RULES.get(func)
        if rule is not None:
            return rule(*args, **kwargs)
        return on_stand_ins(func, *args, **kwargs)

    # ----- operators, through the ufuncs -----
    def __add__(self, other): return np.add(self, other)
    def __radd__(self, other): return np.add(other, self)
    def __sub__(self, other): return np.subtract(self, other)
    def __rsub__(self, other): return np.subtract(other, self)
    def __mul__(self, other): return np.multiply(self, other)
    def __rmul__(self, other): return np.multiply(other, self)
    def __truediv__(self, other): return np.true_divide(self, other)
    def __rtruediv__(self, other): return np.true_divide(other, self)
    def __floordiv__(self, other): return np.floor_divide(self, other)
    def __mod__(self, other): return np.remainder(self, other)
    def __pow__(self, other): return np.power(self, other)
    def __rpow__(self, other): return np.power(other, self)
    def __matmul__(self, other): return np.matmul(self, other)
    def __rmatmul__(self, other): return np.matmul(other, self)
    def __neg__(self): return np.negative(self)
    def __abs__(self): return np.absolute(self)
    def __invert__(self): return np.invert(self)
    def __and__(self, other): return np.bitwise_and(self, other)
    def __or__(self, other): return np.bitwise_or(self, other)
    def __lt__(self, other): return np.less(self, other)
    def __le__(self, other): return np.less_equal(self, other)
    def __gt__(self, other): return np.greater(self, other)
    def __ge__(self, other): return np.greater_equal(self, other)
    def __eq__(self, other): return np.equal(self, other)
    def __ne__(self, other): return np.not_equal(self, other)
    __hash__ = object.__hash__

    def __iadd__(self, other): return np.add(self, other, out=self)
    def __isub__(self, other): return np.subtract(self, other, out=self)
    def __imul__(self, other): return np.multiply(self, other, out=self)
    def __itruediv__(self, other): return np.true_divide(self, other, out=self)


def _resolve_shape(size, shape):
    """shape with its -1 worked out for `size` elements; NumPy's error where none fits."""
    known = math.prod(n for n in shape if n != -1)
    if list(shape).count(-1) > 1 or (-1 not in shape and known != size) or (-1 in shape and (known == 0 or
                                                                                           size % known)):
        raise ValueError(f"cannot reshape array of size {size} into shape {tuple(shape)}")
    return tuple(size // known if n == -1 else n for n in shape)


def matmul_shape(a, b):
    """The shape of a @ b for shapes a and b (NumPy's rules: 1-D operands, broadcast batch dims)."""
    if not a or not b:
        raise ValueError("matmul: Input operand does not have enough dimensions")
    a2, b2 = (1,) + tuple(a) if len(a) == 1 else tuple(a), tuple(b) + (1,) if len(b) == 1 else tuple(b)
    if a2[-1] != b2[-2]:
        raise ValueError(f"matmul: Input operand 1 has a mismatch in its core dimension 0 (size {b2[-2]} is "
                         f"different from {a2[-1]})")
    shape = np.broadcast_shapes(a2[:-2], b2[:-2]) + (a2[-2], b2[-1])
    return shape[:-2] + shape[-2:-1] * (len(a) > 1) + shape[-1:] * (len(b) > 1)


def _einsum(subscripts, *operands, **kwargs):
    """einsum's shape from its explicit subscripts ("ij,ij->i"), its dtype NumPy's on one-element operands."""
    inputs, _, output = subscripts.replace(" ", "").partition("->")
    sizes = {}
    for letters, x in zip(inputs.split(","), operands):
        for letter, n in zip(letters, np.shape(x) if not isinstance(x, MetaArray) else x.shape):
            sizes[letter] = max(sizes.get(letter, 1), n)
    if not _:   # implicit form: the letters that appear once, in order
        output = "".join(sorted(c for c in sizes if inputs.count(c) == 1))
    dtype = np.result_type(*[x.dtype if hasattr(x, "dtype") else x for x in operands])
    return MetaArray([sizes[c] for c in output], dtype)


def _probe(x):
    """A one-element array of x's dtype (x itself for a number): what NumPy's dtype rules see of an operand."""
    return np.ones((), x.dtype) if hasattr(x, "dtype") and not isinstance(x, np.generic) else x


def _where(cond, a, b):
    shape = np.broadcast_shapes(*(np.shape(x) if not isinstance(x, MetaArray) else x.shape for x in (cond, a, b)))
    return MetaArray(shape, np.where(True, _probe(a), _probe(b)).dtype)


def _concatenate(arrays, axis=0, dtype=None, **kwargs):
    shapes = [x.shape if isinstance(x, MetaArray) else np.shape(x) for x in arrays]
    axis = axis % len(shapes[0])
    if any(len(s) != len(shapes[0]) or s[:axis] + s[axis + 1:] != shapes[0][:axis] + shapes[0][axis + 1:]
           for s in shapes):
        raise ValueError(f"all the input array dimensions except for the concatenation axis must match, got {shapes}")
    shape = shapes[0][:axis] + (sum(s[axis] for s in shapes),) + shapes[0][axis + 1:]
    return MetaArray(shape, dtype or np.result_type(*[_probe(x) for x in arrays]))


def _stack(arrays, axis=0, dtype=None, **kwargs):
    shapes = {x.shape if isinstance(x, MetaArray) else np.shape(x) for x in arrays}
    if len(shapes) != 1:
        raise ValueError("all input arrays must have the same shape")
    shape = next(iter(shapes))
    axis = axis % (len(shape) + 1)
    return MetaArray(shape[:axis] + (len(arrays),) + shape[axis:], dtype or np.result_type(*map(_probe, arrays)))


def _like(a, *args, dtype=None, shape=None, **kwargs):
    """zeros_like and the like: a new MetaArray of a's shape."""
    return MetaArray(a.shape if shape is None else shape, dtype or a.dtype)


def _same(a, *args, dtype=None, **kwargs):
    """ascontiguousarray, asarray: the same array (a copy's shape and dtype)."""
    return MetaArray(a.shape, dtype or a.dtype)


def _refuse_values(*args, **kwargs):
    raise RuntimeError(NO_VALUES)


RULES = {np.einsum: _einsum, np.where: _where, np.concatenate: _concatenate, np.stack: _stack,
         np.zeros_like: _like, np.ones_like: _like, np.empty_like: _like, np.full_like: _like,
         np.ascontiguousarray: _same, np.copy: _same, np.copyto: lambda *a, **k: None,
         np.allclose: _refuse_values, np.array_equal: _refuse_values, np.nonzero: _refuse_values,
         np.sum: lambda a, *r, **k: a.sum(*r, **k), np.mean: lambda a, *r, **k: a.mean(*r, **k),
         np.max: lambda a, *r, **k: a.max(*r, **k), np.min: lambda a, *r, **k: a.min(*r, **k),
         np.reshape: lambda a, shape, **k: a.reshape(shape)}


def stand_in(x):
    """A zero-stride NumPy array of x's shape and dtype (no memory) for a MetaArray; x itself otherwise (lists and
    tuples of them too)."""
    if isinstance(x, MetaArray):
        return np.broadcast_to(np.zeros((), x.dtype), x.shape)
    if isinstance(x, (tuple, list)):
        return type(x)(stand_in(i) for i in x)
    return x


def as_meta(x):
    """A MetaArray for each NumPy array or scalar in x (tuples and lists followed); other values as they are."""
    if isinstance(x, (np.ndarray, np.generic)):
        return MetaArray(np.shape(x), x.dtype)
    if isinstance(x, (tuple, list)):
        return type(x)(as_meta(i) for i in x)
    return x


def on_stand_ins(fn, *args, **kwargs):
    """fn on zero-stride stand-ins of the MetaArrays in args, its arrays as MetaArrays."""
    return as_meta(fn(*stand_in(args), **{k: stand_in(v) for k, v in kwargs.items()}))


class Generator:
    """The meta device's random generator: draws of the asked shape and dtype, no values."""

    def __init__(self, seed=None):
        pass

    def _draw(self, size=None, dtype=np.float64, **kwargs):
        return MetaArray(() if size is None else np.atleast_1d(size) if np.ndim(size) else (size,), dtype)

    def standard_normal(self, size=None, dtype=np.float64, **kwargs):
        return self._draw(size, dtype)

    def random(self, size=None, dtype=np.float64, **kwargs):
        return self._draw(size, dtype)

    def uniform(self, low=0.0, high=1.0, size=None):
        return self._draw(size)

    def normal(self, loc=0.0, scale=1.0, size=None):
        return self._draw(size)

    def integers(self, low, high=None, size=None, dtype=np.int64, **kwargs):
        return self._draw(size, dtype)

    def permutation(self, n):
        return MetaArray((n,), np.int64)


def _shape_of(shape):
    return tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)


def _array(data, dtype=None, copy=True, **kwargs):
    if isinstance(data, MetaArray):
        return MetaArray(data.shape, dtype or data.dtype)
    data = np.asarray(data, dtype=dtype)
    return MetaArray(data.shape, data.dtype)


def _arange(start, stop=None, step=1, dtype=None, **kwargs):
    """arange's length and dtype, from NumPy on a 0-length range of the same arguments' types."""
    first, last = (0, start) if stop is None else (start, stop)
    n = max(0, math.ceil((last - first) / step))
    return MetaArray((n,), dtype or np.arange(first, first, step).dtype)


# The array module of the meta device (backend.xp_of, xp_of_device): NumPy's, with factories that make MetaArrays.
xp = types.SimpleNamespace(**{name: getattr(np, name) for name in dir(np) if not name.startswith("_")})
xp.__dict__.update(
    array=_array, asarray=_array, ascontiguousarray=_same,
    zeros=lambda shape, dtype=np.float64, **k: MetaArray(_shape_of(shape), dtype),
    ones=lambda shape, dtype=np.float64, **k: MetaArray(_shape_of(shape), dtype),
    empty=lambda shape, dtype=np.float64, **k: MetaArray(_shape_of(shape), dtype),
    full=lambda shape, value, dtype=None, **k: MetaArray(_shape_of(shape), dtype or np.result_type(value)),
    arange=_arange, linspace=lambda start, stop, num=50, **k: MetaArray((num,), np.float64),
    eye=lambda n, m=None, dtype=np.float64, **k: MetaArray((n, n if m is None else m), dtype),
    random=types.SimpleNamespace(default_rng=Generator))
