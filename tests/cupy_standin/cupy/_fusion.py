"""cupy.fuse under the rules of CuPy 14.2's first fusion implementation (cupy/_core/fusion.pyx), one launch a call.

The body really runs: each argument becomes a `_Var` holding its NumPy value (an array argument holds the device
memory itself, so in-place updates write it), and the stand-in's ufuncs and fusable functions compute on the values
eagerly while checking what CuPy's tracer checks: ufuncs, operators and in-place operators, `astype`, `copy`,
`x[...] = v`, `where`/`clip`/`copyto`/`around`, and one reduction (`sum`, `prod`, `max`/`amax`, `min`/`amin`, `all`,
`any`, `nansum`, `nanprod`) with an `axis` (int or tuple) and without `keepdims`, after which only the reduced value
and constants may be used. Dtypes follow that tracer's rule (NEP 50 with every scalar weak: a Python float argument
or constant keeps float32 arrays float32, a numpy.float64 one makes them float64).

What the first implementation cannot trace, CuPy 14.2 hands to its second (new_fusion.pyx: several ops joined by
cooperative grid synchronisation, experimental, skipped by CuPy's own tests where grid synchronisation is missing).
The stand-in refuses those bodies (NotImplementedError naming the rule), so that a body accepted in CI is one plain
kernel on the GPU. See tests/cupy_standin/README.md, "cupy.fuse".
"""
import functools

import numpy

from . import _core
from ._core import ndarray

FALLBACK = ("; CuPy 14.2 would hand the body to its experimental grid-synchronised fusion (new_fusion.pyx), which the "
            "stand-in refuses: see 'cupy.fuse' in tests/cupy_standin/README.md")
_SCALARS = (bool, int, float, complex, numpy.generic)
_REDUCTIONS = {"sum": numpy.sum, "prod": numpy.prod, "nansum": numpy.nansum, "nanprod": numpy.nanprod,
               "amax": numpy.max, "max": numpy.max, "amin": numpy.min, "min": numpy.min, "all": numpy.all,
               "any": numpy.any}
_LOOP_CHARS = set("?bBhHiIlLqQefdFD")   # the dtypes CuPy's ufuncs have loops for
_WHERE_LOOPS = ["?" + c + c + "->" + c for c in "?bBhHiIlLqQefdFD"]   # cupy._sorting.search._where_ufunc


def _scalar_only(name):
    def refuse(self, *args):
        raise TypeError("Cannot convert to Python scalar in cupy.fuse")
    refuse.__name__ = name
    return refuse


class _Var:
    """A value inside a fused body: an array (ndim >= 0) or a scalar (ndim -1) of the kernel, before the reduction
    (pre-map) or after it (post-map). A constant is a Python or NumPy scalar written in the body."""

    __slots__ = ("_v", "_array", "_postmap", "_const")
    __array_ufunc__ = None   # NumPy must not compute on it

    def __init__(self, value, array, postmap, const=False):
        self._v, self._array, self._postmap, self._const = value, array, postmap, const

    dtype = property(lambda self: numpy.asarray(self._v).dtype if not self._const else numpy.dtype(type(self._v)))
    ndim = property(lambda self: self._v.ndim if self._array else -1)

    @property
    def shape(self):
        raise NotImplementedError("`shape` is not supported, currently." + FALLBACK)

    def __repr__(self):
        return f"<_FusionVar {self.dtype} {f'{self.ndim}-dim array' if self._array else 'scalar'}>"

    __bool__, __int__, __float__, __complex__, __index__ = (
        _scalar_only(n) for n in ("__bool__", "__int__", "__float__", "__complex__", "__index__"))

    def __len__(self):
        raise TypeError("len() of a value inside cupy.fuse: its shape is not known while the kernel is traced")

    def __iter__(self):
        raise TypeError("a value inside cupy.fuse cannot be iterated: a loop over its elements is Python control "
                        "flow on device values")

    def __array__(self, dtype=None, copy=None):
        raise TypeError("a value inside cupy.fuse cannot become a NumPy array")

    def __getitem__(self, key):
        raise NotImplementedError("indexing a value inside cupy.fuse is not supported by CuPy 14.2's first fusion"
                                  + FALLBACK)

    def __setitem__(self, key, value):
        if not (key is Ellipsis or key == slice(None)):
            raise ValueError("The fusion supports `[...]` or `[:]`.")
        _trace().ufunc(_COPY, (value,), self, {})

    def __getattr__(self, name):
        hint = f"; use xp.{name}(x, axis=...)" if name in _REDUCTIONS else ""
        raise AttributeError(f"a value inside cupy.fuse has no attribute '{name}' (CuPy 14.2's first fusion gives "
                             f"its values operators, astype, copy, dtype and ndim only{hint})")

    def astype(self, dtype, order=None, casting=None, subok=None, copy=True):
        for name, value in (("order", order), ("casting", casting), ("subok", subok)):
            if value is not None:
                raise TypeError(f"{name} is not supported yet")
        dtype = numpy.dtype(dtype)
        if not copy and self.dtype == dtype:
            return self
        trace = _trace()
        trace.check_stage(self)
        return _Var(numpy.asarray(self._v).astype(dtype) if self._array else dtype.type(self._v), self._array,
                    trace.reduced)

    def copy(self):
        return _trace().ufunc(_COPY, (self,), None, {})


def _operator(ufunc_name, reflected=False):
    def op(self, other):
        func = getattr(__import__("cupy"), ufunc_name)
        return func(other, self) if reflected else func(self, other)
    return op


def _inplace(ufunc_name):
    def op(self, other):
        if not self._array:
            return NotImplemented   # a scalar: Python rebinds the name to the plain operation's result
        getattr(__import__("cupy"), ufunc_name)(self, other, out=self)
        return self
    return op


for _op, _uf in [("add", "add"), ("sub", "subtract"), ("mul", "multiply"), ("truediv", "true_divide"),
                 ("floordiv", "floor_divide"), ("mod", "remainder"), ("pow", "power"), ("and", "bitwise_and"),
                 ("or", "bitwise_or"), ("xor", "bitwise_xor"), ("lshift", "left_shift"), ("rshift", "right_shift")]:
    setattr(_Var, f"__{_op}__", _operator(_uf))
    setattr(_Var, f"__r{_op}__", _operator(_uf, reflected=True))
    setattr(_Var, f"__i{_op}__", _inplace(_uf))
for _op, _uf in [("lt", "less"), ("le", "less_equal"), ("gt", "greater"), ("ge", "greater_equal"),
                 ("eq", "equal"), ("ne", "not_equal")]:
    setattr(_Var, f"__{_op}__", _operator(_uf))
_Var.__hash__ = None
_Var.__neg__ = lambda self: __import__("cupy").negative(self)
_Var.__pos__ = lambda self: __import__("cupy").positive(self)
_Var.__abs__ = lambda self: __import__("cupy").absolute(self)
_Var.__invert__ = lambda self: __import__("cupy").invert(self)


class _Op:
    """An elementwise operation as the tracer sees it: a name, its loops ("ff->f", in CuPy's order) and a NumPy
    function computing it on values cast to the chosen loop's input dtypes."""

    def __init__(self, name, loops, compute, nin, nout=1):
        self.name, self.loops, self.compute, self.nin, self.nout = name, loops, compute, nin, nout


_COPY = _Op("copy", [c + "->" + c for c in "?bBhHiIlLqQefdFD"], lambda x: numpy.array(x, copy=True), 1)


def _ufunc_op(ufunc):
    loops = [t for t in ufunc.types if set(t.replace("->", "")) <= _LOOP_CHARS]
    return _Op(ufunc.__name__, loops, ufunc, ufunc.nin, ufunc.nout)


class _Trace:
    """One fused call being run: the broadcast shape of its array arguments, and whether the reduction happened."""

    def __init__(self, name, shape, arguments):
        self.name, self.shape, self.reduced, self.reduced_shape = name, shape, False, None
        self.overlapping = set()   # ids of argument _Vars whose memory another argument reads with another layout
        self.arguments = {id(v): i for i, v in enumerate(arguments) if v is not None}
        self.written = []          # the positions of the arguments written in place so far

    def var(self, x):
        """A body's operand as a _Var: constants become constant scalars; concrete arrays are refused."""
        if isinstance(x, _Var):
            return x
        if isinstance(x, _SCALARS):
            return _Var(x, False, self.reduced, const=True)
        if isinstance(x, (ndarray, numpy.ndarray)):
            raise TypeError("Concrete ndarray is not supported in fusion.")
        raise TypeError(f"{type(x)} type is not supported")

    def check_stage(self, v):
        if v._postmap != self.reduced:
            raise NotImplementedError("a value from before the fused reduction is used after it (CuPy 14.2's first "
                                      "fusion: 'Shape mismatch'); after the reduction only its result and constants "
                                      "may be used" + FALLBACK)

    def loop(self, op, ins, outs):
        """The first of op's loops the arguments can be cast to, by CuPy 14.2's fusion rule (fusion.pyx call_ufunc ->
        _guess_routine_from_in_types with each operand's is_weak): every scalar, constant or argument, Python or
        NumPy, is weak there (`is_weak = pytype if [bool, int, float, complex] else False` is always its type), and
        _check_should_use_weak_scalar is not applied; so a scalar fits a loop type NumPy 2 keeps beside it:
        `x_float32 * s` stays float32 for a Python float s, becomes float64 for s = numpy.float64 (numpy.float64(0)
        is strong in NumPy 2), and `x_uint8 + 0.5` takes the float16 loop (outside fuse: float64)."""
        in_types = [numpy.dtype(v.dtype) for v in ins]
        weaks = [False if v._array else type(v._v) for v in ins]   # a value made in the body is a NumPy scalar
        dtypes = _core._first_loop(op.loops, in_types, weaks)
        if dtypes is not None:
            loop = next(lp for lp in op.loops if [numpy.dtype(c) for c in lp.split("->")[0]] == dtypes)
            return dtypes, [numpy.dtype(c) for c in loop.split("->")[1]]
        raise TypeError(f"Invalid type cast in '{op.name}': {[v.dtype for v in ins]} -> {[v.dtype for v in outs]}")

    def ufunc(self, op, args, out, kwargs):
        """An elementwise op on the body's values; out (a _Var, or a tuple) is written in place."""
        if kwargs:
            raise TypeError(f"Wrong arguments {kwargs}")
        ins, outs = list(args[:op.nin]), list(args[op.nin:])
        if out is not None:
            if outs:
                raise ValueError("cannot specify 'out' as both a positional and keyword argument")
            outs = list(out) if isinstance(out, tuple) else [out]
        ins, outs = [self.var(a) for a in ins], [self.var(o) for o in outs]
        if len(ins) != op.nin or len(outs) > op.nout:
            raise ValueError("invalid number of arguments")
        if not all(o._array for o in outs):
            raise TypeError("return arrays must be of ArrayType")
        if any(id(o) in self.overlapping for o in outs):
            raise ValueError(f"cupy.fuse '{self.name}': an argument is written in place while another argument "
                             "overlaps its memory with other strides or offset: once each element is its own GPU "
                             "thread, threads would read and write it in no fixed order")
        for v in ins + outs:
            self.check_stage(v)
        self.written += [self.arguments[id(o)] for o in outs if id(o) in self.arguments]
        if any(o.ndim < max(v.ndim for v in ins) for o in outs):
            raise ValueError("non-broadcastable output operand")
        in_dtypes, out_dtypes = self.loop(op, ins, outs)
        values = [numpy.asarray(v._v).astype(dt, copy=False) for v, dt in zip(ins, in_dtypes)]
        results = op.compute(*values)
        results = list(results) if isinstance(results, tuple) else [results]
        returned = []
        for i, result in enumerate(results):
            result = numpy.asarray(result).astype(out_dtypes[i], copy=False)
            if i < len(outs):
                if not numpy.can_cast(out_dtypes[i], outs[i].dtype, "same_kind"):
                    raise TypeError(f"Cannot cast ufunc '{op.name}' output from {out_dtypes[i]} to {outs[i].dtype} "
                                    "with casting rule 'same_kind'")
                numpy.copyto(outs[i]._v, result, casting="unsafe")
                returned.append(outs[i])
            else:
                array = any(v._array for v in ins)
                returned.append(_Var(result if array else result[()], array, self.reduced))
        return returned[0] if len(returned) == 1 else tuple(returned)

    def reduction(self, name, a, axis=None, dtype=None, out=None, keepdims=False):
        if keepdims:
            raise NotImplementedError(f"cupy.{name} does not support `keepdims` in fusion yet.")
        v = self.var(a)
        if not v._array:
            raise NotImplementedError("Reduction for scalar arguments is not supported.")
        if self.reduced:
            raise NotImplementedError("Multiple reduction is not implemented yet" + FALLBACK)
        if self.written:
            raise ValueError(
                f"cupy.fuse '{self.name}' writes its argument {self.written[0]} in place in a body that ends in a "
                "reduction: CuPy 14.2's first fusion makes such a body a ReductionKernel whose pre-map takes its "
                "arguments by value (cupy/_core/fusion.pyx, _emit_premap_code), so on a GPU the write never reaches "
                "memory; write the array in a kernel without a reduction")
        if dtype is not None or out is not None:
            raise NotImplementedError(f"cupy.{name}(dtype=..., out=...) inside cupy.fuse: CuPy 14.2's first fusion "
                                      "drops dtype (the result takes the reduction's own type); cast with astype "
                                      "before reducing, and return the result instead of passing out")
        if v._v.shape != self.shape:
            raise NotImplementedError(
                f"cupy.{name} of a {v._v.shape} value in a kernel whose array arguments broadcast to {self.shape}: "
                "CuPy 14.2's fused reduction runs over the broadcast shape of all the array arguments, so it would "
                "not reduce this value as NumPy does")
        result = numpy.asarray(_REDUCTIONS[name](v._v, axis=axis))
        self.reduced, self.reduced_shape = True, result.shape
        return _Var(result if result.ndim else result[()], result.ndim > 0, True)

    def function(self, name, args, kwargs):
        """A cupy function called inside the body: the fusable ones (CuPy's own `_is_fusing()` branches)."""
        cupy = __import__("cupy")
        if name in _REDUCTIONS:
            return self.reduction(name, *args, **kwargs)
        if name == "where":
            if len(args) + len(kwargs) != 3:
                raise NotImplementedError("cupy.where(condition) inside cupy.fuse: its shape depends on the data")
            return self.ufunc(_Op("where", _WHERE_LOOPS, numpy.where, 3), tuple(args) + tuple(kwargs.values()),
                              None, {})
        if name == "clip":
            out = kwargs.pop("out", None)
            return self.ufunc(_ufunc_op(numpy._core.umath.clip), args, out, kwargs)
        if name == "copy":
            return self.ufunc(_COPY, args[:1], None, {})
        if name == "copyto":
            dst, src = args[0], args[1]
            if kwargs.get("where") is not None:
                return self.ufunc(_Op("where", _WHERE_LOOPS, numpy.where, 3), (kwargs["where"], src, dst), dst, {})
            return self.ufunc(_COPY, (src,), dst, {})
        if name in ("around", "round", "round_"):
            decimals = args[1] if len(args) > 1 else kwargs.pop("decimals", 0)
            return self.ufunc(_Op(name, [c + "->" + c for c in "efdFD"], lambda x: numpy.round(x, decimals), 1),
                              args[:1], kwargs.pop("out", None), kwargs)
        if name in ("real", "imag"):
            return self.ufunc(_Op(name, [c + "->" + c for c in "efd"] + ["F->f", "D->d"],
                                  getattr(numpy, name), 1), args[:1], None, {})
        del cupy
        raise NotImplementedError(f"cupy.{name} cannot be used inside cupy.fuse: CuPy 14.2 fuses ufuncs, operators, "
                                  "astype, copy, where, clip, copyto, around and one reduction (sum, prod, max, "
                                  "min, all, any, nansum, nanprod)")


def _trace():
    return getattr(_core.fusion_state, "trace", None)


_ARGUMENT_TYPES = (ndarray, numpy.ndarray, numpy.generic, int, float, complex, bool, type(None))


class Fusion:
    """What cupy.fuse returns: calling it runs the body as one kernel (one launch) on device arrays, or as plain
    Python when no argument is a device array (as CuPy does)."""

    def __init__(self, func, name=None):
        self.func, self.name = func, name or func.__name__

    def __repr__(self):
        return f"<Fusion '{self.name}'>"

    def __call__(self, *args):
        if _trace() is not None or not any(isinstance(a, ndarray) for a in args):
            return self.func(*args)   # inside another fused body it is inlined; without device arrays, plain
        if not all(isinstance(a, _ARGUMENT_TYPES) for a in args):
            raise TypeError(f"Invalid argument type for '{self.name}': ({', '.join(repr(type(a)) for a in args)})")
        if any(isinstance(a, numpy.ndarray) for a in args):
            raise TypeError(f"Unsupported type {numpy.ndarray} in cupy.fuse '{self.name}': host arrays cannot be "
                            "kernel arguments; copy them with cupy.asarray first")
        arrays = [a for a in args if isinstance(a, ndarray)]
        variables = [None if a is None else _Var(a._a, True, False) if isinstance(a, ndarray)
                     else _Var(a, False, False) for a in args]   # a Python scalar stays weak
        trace = _Trace(self.name, numpy.broadcast_shapes(*(a.shape for a in arrays)), variables)
        for i, a in enumerate(args):
            if isinstance(a, ndarray) and any(_core.overlaps(a, b) and not _same_layout(a, b) for b in arrays):
                trace.overlapping.add(id(variables[i]))
        _core.fusion_state.trace = trace
        try:
            with _core.quiet():   # the body's operations are the one kernel
                returned = self.func(*variables)
                result = self._outputs(trace, returned)
        finally:
            _core.fusion_state.trace = None
        _core.record_launch("fused")
        _core.FUSED_CALLS[f"{self.func.__module__}.{self.func.__qualname__}"].add(signature(args))
        return result

    def _outputs(self, trace, returned):
        """The kernel's outputs as new device arrays: of the arguments' broadcast shape, or the reduced shape."""
        if returned is None:
            return None
        values = returned if isinstance(returned, tuple) else (returned,)
        values = [v for v in values if v is not None]
        for v in values:
            if not isinstance(v, _Var):
                raise TypeError(f"Fusion function can't return {type(v)}")
            trace.check_stage(v)
        shape = trace.reduced_shape if trace.reduced else trace.shape
        out = tuple(_core._wrap(numpy.array(numpy.broadcast_to(numpy.asarray(v._v, v.dtype), shape)))
                    for v in values)
        return out if isinstance(returned, tuple) else out[0]


def _same_layout(a, b):
    """Two views of the same elements in the same order: element i of each is read and written by thread i alone."""
    return (a is b or (a.shape == b.shape and a.strides == b.strides and
                       a._a.__array_interface__["data"][0] == b._a.__array_interface__["data"][0]))


def signature(args):
    """What CuPy's kernel source depends on, per argument, as JSON-able lists: ["array", dtype, shape, strides] (strides
    in bytes), ["numpy", dtype] for a NumPy scalar, ["python", "float"] (int, bool, complex) or ["none"]. Recorded in
    `_core.FUSED_CALLS` for each call, so that scripts/cuda_sources.py can build each kernel as the real CuPy would."""
    def one(a):
        if isinstance(a, ndarray):
            return ("array", a.dtype.str, tuple(a.shape), tuple(a.strides))
        if isinstance(a, numpy.generic):
            return ("numpy", a.dtype.str)
        return ("none",) if a is None else ("python", type(a).__name__)
    return tuple(one(a) for a in args)


def fuse(*args, **kwargs):
    """cupy.fuse(func) or cupy.fuse(kernel_name=...)(func): func's body as one elementwise (or reduction) kernel."""
    def wrapper(f, kernel_name=None):
        return functools.update_wrapper(Fusion(f, kernel_name), f)
    if len(args) == 1 and not kwargs and callable(args[0]):
        return wrapper(args[0])
    return lambda f: wrapper(f, *args, **kwargs)
