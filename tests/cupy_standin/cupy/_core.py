"""The stand-in's device array: a NumPy array held behind CuPy's rules, and the log of host synchronisations.

The NumPy array `_a` plays the GPU's memory. Nothing reaches it from outside except through what real CuPy allows:
NumPy cannot convert the array implicitly (`__array__` raises CuPy's TypeError), kernels refuse host arrays, every
result is again a device array (reductions and scalar indexing give 0-d arrays), and each call that would make the
host wait for the GPU (`get`, `item`, `float`, `int`, `bool`, `tolist`, `asnumpy`, printing, boolean-mask indexing,
`nonzero`, `synchronize`) is appended to `SYNCS` with the line of the caller's code that asked for it.

Each call that would launch work on the GPU's stream is counted in `LAUNCHES` (by kind: see `record_launch` and the
README), and each copy between host and device in `MEMCPYS`; `count_launches()` counts those of one block of code.
"""
import collections
import contextlib
import json
import os
import sys
import sysconfig
import threading
import weakref
from pathlib import Path

import numpy

NAMES = json.loads(Path(__file__).resolve().parent.parent.joinpath("cupy_names.json").read_text())
_STANDIN_DIR = str(Path(__file__).resolve().parent.parent)
_LIBRARY_DIRS = tuple({str(Path(numpy.__file__).resolve().parent), sysconfig.get_paths()["stdlib"],
                       sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})

# ----- host synchronisations -----
SYNCS = []  # (kind, "file:line" of the first caller outside the stand-in, NumPy and the standard library)
_forbidden = threading.local()


class DeviceSynchronized(RuntimeError):
    """Raised when the host waits for the device inside `cupyx.allow_synchronize(False)`."""

    def __init__(self, message=None):
        super().__init__(message or "Device synchronization was detected while disallowed.")


def _caller(depth=2):
    """"file:line" of the first `depth` frames of the caller's own code, innermost first, joined by " < "."""
    frame, found = sys._getframe(2), []
    while frame is not None and len(found) < depth:
        name = frame.f_code.co_filename
        if not (name.startswith(_STANDIN_DIR) or name.startswith(_LIBRARY_DIRS) or name.startswith("<")):
            found.append(f"{os.path.relpath(name)}:{frame.f_lineno}")
        frame = frame.f_back
    return " < ".join(found) or "?"


def record_sync(kind):
    """Note one device-to-host wait (and refuse it inside allow_synchronize(False))."""
    where = _caller()
    SYNCS.append((kind, where))
    if getattr(_forbidden, "on", False):
        raise DeviceSynchronized(f"{kind} at {where} while synchronisation is disallowed")


@contextlib.contextmanager
def allow_synchronize(allow):
    old, _forbidden.on = getattr(_forbidden, "on", False), not allow
    try:
        yield
    finally:
        _forbidden.on = old


# ----- kernel launches -----
# Kinds: elementwise (ufuncs, operators, where, clip), reduction (sum/max/mean/argmax...), scan (cumsum), matmul (one
# cuBLAS call), copy (copies and casts made on the device), gather / scatter (integer-array indexing, scatter_add),
# mask (boolean-mask indexing: cast + scan + gather, counted as 3), fill (a fill kernel), memset / memcpy_d2d (not
# kernels, but stream operations that cost a host call each, as a kernel does), random, sort (thrust), fused.
LAUNCHES = collections.Counter()
FUSED_CALLS = collections.defaultdict(set)  # "module.qualname" of a cupy.fuse body -> its calls' _fusion.signature
MEMCPYS = collections.Counter()  # h2d / d2h: host<->device copies, counted apart (they are memcpys, not kernels)
_open_counts = []  # the LaunchCount of each open count_launches() block
_quiet = threading.local()  # depth > 0 inside a fused body: its operations are part of the one fused launch
fusion_state = threading.local()  # .trace: the cupy.fuse call whose body is running (see _fusion.py), else None


class LaunchCount(collections.Counter):
    """Launches by kind in one count_launches() block; `.memcpys` holds its host<->device copies, `.total` the sum."""

    def __init__(self):
        super().__init__()
        self.memcpys = collections.Counter()

    @property
    def total(self):
        return sum(self.values())


def record_launch(kind, n=1):
    """Note n launches of one kind (nothing inside a fused body, which is one launch as a whole)."""
    if n <= 0 or getattr(_quiet, "depth", 0):
        return
    LAUNCHES[kind] += n
    for count in _open_counts:
        count[kind] += n


def record_memcpy(kind, n=1):
    """Note a host<->device copy ("h2d" or "d2h")."""
    if n <= 0 or getattr(_quiet, "depth", 0):
        return
    MEMCPYS[kind] += n
    for count in _open_counts:
        count.memcpys[kind] += n


@contextlib.contextmanager
def count_launches():
    """Counts the launches (and, in `.memcpys`, the host<->device copies) made inside the block."""
    count = LaunchCount()
    _open_counts.append(count)
    try:
        yield count
    finally:
        _open_counts.remove(count)


@contextlib.contextmanager
def quiet():
    """Launches inside are not counted (the body of one fused kernel)."""
    _quiet.depth = getattr(_quiet, "depth", 0) + 1
    try:
        yield
    finally:
        _quiet.depth -= 1


def check_signature(qualname, args, kwargs):
    """Refuse what CuPy 14.2's own definition of the function does not take (cupy_names.json's "signatures", read
    from its source): keywords NumPy has and CuPy lacks (`where=`, `initial=`, ...) and extra positionals."""
    sig = NAMES["signatures"].get(qualname)
    if sig is None:
        return
    short = qualname.rsplit(".", 1)[1]
    if not sig["varkw"]:
        for key in kwargs:
            if key not in sig["params"]:
                raise TypeError(f"{short}() got an unexpected keyword argument '{key}' (CuPy 14.2's {qualname} "
                                f"takes {', '.join(sig['params']) or 'no keywords'})")
    if not sig["varargs"] and len(args) > len(sig["params"]):
        raise TypeError(f"{short}() takes at most {len(sig['params'])} positional arguments but {len(args)} were "
                        f"given (CuPy 14.2's {qualname})")


def overlaps(a, b):
    """True when two device arrays' memory bounds overlap (CuPy's may_share_bounds)."""
    return numpy.may_share_memory(a._a, b._a)


def refuse_overlap(what, out, inputs):
    """Kernels that do not guard their output (reductions, scatters, fused kernels) refuse an output overlapping an
    input: CuPy does not order such reads and writes, so the GPU's result would be undefined."""
    for a in inputs:
        if isinstance(a, ndarray) and isinstance(out, ndarray) and overlaps(a, out):
            raise ValueError(f"{what}: the output overlaps an input; CuPy does not guarantee the result of such a "
                             "kernel (its threads read and write the same memory in no fixed order): write to a new "
                             "array")


def _arrays(x):
    """The NumPy arrays (device memory) inside x: arrays, lists, tuples, dicts."""
    if isinstance(x, ndarray):
        return [x._a]
    if isinstance(x, numpy.ndarray):
        return [x]
    if isinstance(x, (list, tuple)):
        return [a for v in x for a in _arrays(v)]
    if isinstance(x, dict):
        return [a for v in x.values() for a in _arrays(v)]
    return []


def _new_arrays(result, inputs):
    """The arrays of a result that are new memory, not views of the inputs (a view launches nothing)."""
    sources = [a for a in _arrays(inputs) if a.size]
    return [r for r in _arrays(result) if not any(numpy.may_share_memory(r, a) for a in sources)]


def _has_host_data(x):
    """True when x holds host data that CuPy copies to the device (NumPy arrays, lists, numbers in a list)."""
    if isinstance(x, numpy.ndarray):
        return True
    if isinstance(x, (list, tuple)):
        return any(_has_host_data(v) or isinstance(v, _SCALARS_ANY) for v in x)
    return False


_SCALARS_ANY = (bool, int, float, complex, numpy.generic)


# What each function and ndarray method launches on CuPy 14.2 (read from its source), by name. A name not listed
# launches one elementwise kernel per new array it returns (a view, a host value or a shape launches nothing).
_REDUCTIONS = {"sum", "prod", "mean", "max", "min", "amax", "amin", "argmax", "argmin", "all", "any", "nansum",
               "nanprod", "nanmean", "nanmax", "nanmin", "nanargmax", "nanargmin", "count_nonzero", "average",
               "trace", "vdot"}
_FIXED = {"var": {"reduction": 2}, "nanvar": {"reduction": 2},  # mean, then the squared deviations' reduction
          "std": {"reduction": 2, "elementwise": 1}, "nanstd": {"reduction": 2, "elementwise": 1},
          "ptp": {"reduction": 2, "elementwise": 1},
          "nancumsum": {"scan": 1}, "nancumprod": {"scan": 1}, "partition": {"sort": 1}, "argpartition": {"sort": 1},
          "lexsort": {"sort": 1}, "msort": {"sort": 1}, "unique": {"sort": 1, "mask": 3},
          "take": {"gather": 1}, "take_along_axis": {"gather": 1}, "choose": {"gather": 1},
          "compress": {"mask": 3}, "extract": {"mask": 3}, "nonzero": {"mask": 3}, "argwhere": {"mask": 3},
          "flatnonzero": {"mask": 3},
          "put": {"scatter": 1}, "place": {"scatter": 1}, "putmask": {"scatter": 1},
          "put_along_axis": {"scatter": 1},
          "empty": {}, "empty_like": {}, "zeros": {"memset": 1}, "zeros_like": {"memset": 1},
          "ones": {"fill": 1}, "ones_like": {"fill": 1}, "full": {"fill": 1}, "full_like": {"fill": 1},
          "eye": {"memset": 1, "fill": 1}, "identity": {"memset": 1, "fill": 1}, "tri": {"fill": 1},
          "tril": {"fill": 1, "elementwise": 1}, "triu": {"fill": 1, "elementwise": 1}}
_MATMUL = {"matmul", "dot", "inner", "tensordot", "einsum", "outer_product"}
_JOIN = {"concatenate", "stack", "hstack", "vstack", "dstack", "column_stack", "row_stack"}


def _operands(x):
    return [v for v in (x if isinstance(x, (list, tuple)) else [x]) if isinstance(v, ndarray)]


def _matmul_launches(args):
    """One cuBLAS call, plus the copies CuPy makes of operands cuBLAS cannot read as they are: a 2-D operand that
    is neither C- nor F-contiguous, a batched (>2-D) one that is not C-contiguous, one of another dtype."""
    arrays = _operands(args[1:] if args and isinstance(args[0], str) else args[:2])
    dtype = numpy.result_type(*[a._a.dtype for a in arrays]) if arrays else None
    copies = 0
    for a in arrays:
        flags = a._a.flags
        if a.ndim > 2 and not flags.c_contiguous or a.ndim == 2 and not (flags.c_contiguous or flags.f_contiguous):
            copies += 1
        elif a._a.dtype != dtype:
            copies += 1
    return {"matmul": 1, "copy": copies}


def _join_launches(arrays, result):
    """CuPy's concatenate: more than 8 arrays of one dtype and < 2 MiB each on average are copied by one kernel
    (after copying their pointers to the device); otherwise one copy kernel per array."""
    arrays = list(arrays)
    if len(arrays) > 8 and len({a._a.dtype for a in arrays}) == 1 and \
            sum(a.nbytes for a in arrays) < 2 * 1024 * 1024 * len(arrays):
        record_memcpy("h2d")
        return {"copy": 1}
    return {"copy": sum(1 for a in arrays if a.size)}


def record_call(name, args, kwargs, result):
    """Count what the function or method `name` launched on CuPy, given its device arguments and its result."""
    if name in _FIXED:
        launches = dict(_FIXED[name])
        if name in ("var", "std", "nanvar", "nanstd"):   # the mean first: a full one takes CUB's two passes
            launches["reduction"] += _reduction_launches("mean", args, {"axis": _arg(name, args, kwargs, "axis")})[
                "reduction"] - 1
    elif name in _REDUCTIONS:
        launches = _reduction_launches(name, args, kwargs)
    elif name in ("cumsum", "cumprod"):
        launches = _scan_launches(name, args, kwargs)
    elif name in ("sort", "argsort"):
        launches = _sort_launches(name, args, kwargs)
    elif name in _MATMUL:
        launches = _matmul_launches(args)
    elif name in _JOIN:
        launches = _join_launches(_operands(args[0] if args else kwargs.get("arrays", kwargs.get("tup", ()))),
                                  result)
    elif name == "where" and len(args) + len(kwargs) == 1:
        launches = {"mask": 3}
    elif name == "copyto":
        dst, src = args[0], args[1] if len(args) > 1 else kwargs["src"]
        launches = {"elementwise": 1} if isinstance(src, ndarray) or kwargs.get("where") is not None \
            else _fill_launches(dst, src)
    else:
        launches = {"elementwise" if name not in ("copy", "astype", "ascontiguousarray", "asarray", "array",
                                                  "asfortranarray", "asanyarray", "repeat", "tile", "flatten",
                                                  "ravel", "reshape", "roll", "pad", "resize") else "copy":
                    len(_new_arrays(result, (args, kwargs)))}
    if name in ("empty", "empty_like") or not _arrays(result) and name not in _FIXED and name != "copyto" \
            and name not in ("put", "place", "putmask", "put_along_axis", "sort"):
        launches = {}
    if name in ("zeros", "zeros_like", "ones", "ones_like", "full", "full_like") and not _arrays(result)[0].size:
        launches = {}
    for kind, n in launches.items():
        record_launch(kind, n)


def _arg(name, args, kwargs, param):
    """The argument `param` of a call of cupy.`name` (args[0] is the array, for a method too), or None."""
    sig = NAMES["signatures"].get(f"cupy.{name}")
    params = sig["params"] if sig else ["a"] + NAMES["signatures"].get(f"cupy.ndarray.{name}", {"params": []})["params"]
    if param in kwargs:
        return kwargs[param]
    i = params.index(param) if param in params else len(args)
    return args[i] if i < len(args) else None


def _axes(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    return tuple(sorted(a % ndim for a in (axis if isinstance(axis, (tuple, list)) else (axis,))))


# CuPy 14.2 uses CUB by default (cupy/_core/_accelerator.pyx: CUPY_ACCELERATORS defaults to "cub" on CUDA), at two
# levels. The routine level (cupy/cuda/cub.pyx cub_reduction, called from _routines_math.pyx / _routines_statistics.pyx
# for sum, prod, amax, amin, argmax, argmin): a full reduction of a C- or F-contiguous array is cub::DeviceReduce, a
# reduction over its contiguous trailing (C) or leading (F) axes cub::DeviceSegmentedReduce, for the dtypes CUB takes
# (sum/prod without dtype=: int64, uint64 and floats only, since CuPy promotes smaller ints). The kernel level
# (_cub_reduction.pyx, for every one-input reduction kernel not taken above: mean, all, any, int32 sums, ...): a full
# reduction of a contiguous array of >= 128 elements is CUB's block reduction in two passes (_cub_two_pass_launch).
_CUB_ROUTINE = {"sum": "sum", "prod": "sum", "max": "", "amax": "", "min": "", "amin": "", "argmax": "arg",
                "argmin": "arg"}
_CUB_SUM_DTYPES = set("qQlLefdFD")
_CUB_DTYPES = set("bBhHiIlLqQefdFD")
_SIMPLE_REDUCTIONS = {"sum", "prod", "mean", "max", "min", "amax", "amin", "argmax", "argmin", "all", "any",
                      "nansum", "nanprod"}


def _reduction_launches(name, args, kwargs):
    """The kernels of one reduction on CuPy 14.2 (see above): cub::DeviceReduce is one kernel when the input fits
    one tile of its single-tile policy (256 threads x min(16, 64 / itemsize) items: 4096 float32, 2048 float64),
    else two (a multi-block pass, then the single-tile pass over its partial results)."""
    a = args[0] if args and isinstance(args[0], ndarray) else None
    if a is None or name not in _SIMPLE_REDUCTIONS:
        return {"reduction": 1}
    axes, dtype, out = _axes(_arg(name, args, kwargs, "axis"), a.ndim), _arg(name, args, kwargs, "dtype"), \
        _arg(name, args, kwargs, "out")
    flags = a._a.flags
    contiguous = flags.c_contiguous or flags.f_contiguous
    full = len(axes) == a.ndim
    copies = 1 if out is not None else 0
    kind = _CUB_ROUTINE.get(name)
    cub_dtype = (dtype is None and a.dtype.char in (_CUB_SUM_DTYPES if kind == "sum" else _CUB_DTYPES)) or \
        (dtype is not None and kind != "arg" and numpy.dtype(dtype) == a.dtype and a.dtype.char in _CUB_DTYPES)
    if kind is not None and contiguous and cub_dtype and a.size:
        if full and a.size <= 0x7FFFFFFF:
            tile = 256 * min(16, max(1, 64 // a.itemsize))
            # argmax/argmin read the index out of CUB's key-value pair with an astype(int64)
            return {"reduction": 1 if a.size <= tile else 2, "copy": copies + (kind == "arg")}
        # segmented: the reduced axes are the trailing ones of a C-contiguous array (leading ones of an F one)
        trailing = axes == tuple(range(a.ndim - len(axes), a.ndim))
        leading = axes == tuple(range(len(axes)))
        if kind != "arg" and (flags.c_contiguous and trailing or flags.f_contiguous and leading):
            return {"reduction": 1, "copy": copies}
    if full and contiguous and a.size >= 128:
        return {"reduction": 2}   # _cub_two_pass_launch
    return {"reduction": 1}


def _batch_scan_kernels(batch):
    """_batch_scan_op's kernels for rows of `batch` elements (block 512): the scan, and for longer rows a scan of
    every 512th partial sum and an add kernel."""
    return 1 if batch <= 512 else 2 + _batch_scan_kernels(batch // 512)


def _scan_launches(name, args, kwargs):
    """cumsum/cumprod as CuPy 14.2's scan_core (_routines_math.pyx): the input copied (cast) into the result (`out`
    when contiguous, else a new C array), rolled so that the axis is last and reshaped to rows (a copy unless the axis
    is already last), _batch_scan_op, and an elementwise copy back into `out` when the rows are not its memory.
    axis=None: a raveled copy and cub::DeviceScan (two kernels: init and scan)."""
    a = args[0] if args and isinstance(args[0], ndarray) else None
    if a is None or not a.size:
        return {}
    axis, out = _arg(name, args, kwargs, "axis"), _arg(name, args, kwargs, "out")
    out_contiguous = out is not None and (out._a.flags.c_contiguous or out._a.flags.f_contiguous)
    copies = 1   # elementwise_copy(a, out) or a.astype(out.dtype / dtype, order='C')
    if axis is None:
        return {"copy": copies + (out is not None and not out_contiguous), "scan": 2}
    axis = axis % a.ndim
    rolled = axis != a.ndim - 1 and any(n > 1 for i, n in enumerate(a.shape) if i != axis)
    result_is_c = not out_contiguous or out._a.flags.c_contiguous
    reshape_copy = rolled or not result_is_c and a.ndim > 1
    copies += reshape_copy
    if out is not None and (reshape_copy or not out_contiguous):
        copies += 1   # the rows are not out's memory: elementwise_copy back
    return {"copy": copies, "scan": _batch_scan_kernels(a.shape[axis])}


def _sort_launches(name, args, kwargs):
    """sort/argsort (_routines_sorting.pyx + cupy_thrust.cu): the data copied (rolled to the last axis), then
    thrust: argsort's index sequence (a transform), the keys of each row for >1-D (a transform), and thrust's
    stable sort (several kernels, counted one). cupy.sort is a.copy() and then ndarray.sort in place."""
    a = args[0] if args and isinstance(args[0], ndarray) else None
    if a is None or not a.size:
        return {}
    ndim = 1 if _arg(name, args, kwargs, "axis") is None and name == "argsort" and "axis" in kwargs else max(a.ndim, 1)
    return {"copy": 1, "sort": 1 + (name == "argsort") + (ndim > 1)}


def _fill_launches(target, value):
    """ndarray.fill: zero over contiguous memory is a cudaMemsetAsync, anything else a fill kernel."""
    if not target.size:
        return {}
    if not isinstance(value, ndarray) and target._a.flags.c_contiguous and numpy.all(numpy.asarray(value) == 0):
        return {"memset": 1}
    return {"fill": 1}


# ----- what may enter a kernel -----
_SCALARS = (bool, int, float, complex, numpy.generic)


def _unsupported(x):
    return TypeError(f"Unsupported type {type(x)}")


def _kernel_arg(x):
    """A kernel operand: a device array or a scalar; host arrays, lists and other objects are refused."""
    if isinstance(x, ndarray):
        return x._a
    if isinstance(x, _SCALARS):
        return x
    raise _unsupported(x)


def _unwrap(x, host_ok=False):
    """Device arrays -> their memory, recursively through lists, tuples and dicts; host arrays refused unless
    host_ok (the functions that copy host data to the device)."""
    if isinstance(x, ndarray):
        return x._a
    if isinstance(x, numpy.ndarray):
        if host_ok:
            return x
        raise TypeError(f"Unsupported type {type(x)}: a NumPy array cannot be used where CuPy needs a device array; "
                        "copy it with cupy.asarray first")
    if isinstance(x, (list, tuple)):
        return type(x)(_unwrap(v, host_ok) for v in x)
    if isinstance(x, dict):
        return {k: _unwrap(v, host_ok) for k, v in x.items()}
    return x


class _Pool:
    """Device memory as CuPy's pool counts it: bytes of the live arrays that own their memory (views do not), and
    the most held at once since the pool last gave its free blocks back (CuPy's pool keeps freed blocks)."""
    used = held = 0

    @classmethod
    def allocate(cls, array):
        _OWNERS[id(array._a)] = array
        cls.used += array.nbytes
        cls.held = max(cls.held, cls.used)
        weakref.finalize(array, cls.release, array.nbytes)

    @classmethod
    def release(cls, nbytes):
        cls.used -= nbytes


# The device array that owns each NumPy array's memory, so that a view's .base is that array, as on CuPy (one
# object: code that compares bases by identity, as autograd's version check does, sees the same buffer each time)
_OWNERS = weakref.WeakValueDictionary()


def _base(a):
    owner = _OWNERS.get(id(a))
    return owner if owner is not None and owner._a is a else _wrap(a)


def _wrap(result):
    """NumPy results -> device arrays: arrays and NumPy scalars become (0-d) device arrays, tuples stay tuples."""
    if isinstance(result, numpy.ndarray):
        out = ndarray.__new__(ndarray)
        out._a = result
        if result.base is None:
            _Pool.allocate(out)
        return out
    if isinstance(result, numpy.generic):
        return _wrap(numpy.asarray(result))
    if isinstance(result, tuple):
        return tuple(_wrap(r) for r in result)
    if isinstance(result, list):
        return [_wrap(r) for r in result]
    return result


def _advanced(key):
    """What indexing with `key` launches: "mask" (boolean array), "gather" (integer arrays) or None (a view)."""
    parts = key if isinstance(key, tuple) else (key,)
    kind = None
    for part in parts:
        if isinstance(part, (ndarray, numpy.ndarray, list)):
            if isinstance(part, (numpy.ndarray, list)):
                record_memcpy("h2d")  # a host index array is copied to the device first
            raw = part._a if isinstance(part, ndarray) else numpy.asarray(part)
            if raw.dtype == numpy.bool_ and raw.ndim > 0:
                return "mask"
            kind = "gather"
    return kind


def _index(key):
    """An index as CuPy takes it: device arrays, host arrays and lists (copied to the device), slices, ints. A boolean
    array makes the output's shape depend on the data, so the host waits for its count."""
    parts = key if isinstance(key, tuple) else (key,)
    for part in parts:
        if isinstance(part, ndarray) and part.dtype == numpy.bool_ and part.ndim > 0:
            record_sync("boolean-mask indexing")
        elif isinstance(part, (numpy.ndarray, list)) and numpy.asarray(part).dtype == numpy.bool_:
            record_sync("boolean-mask indexing")
    return _unwrap(key, host_ok=True)


class MemoryPointer:
    """What `ndarray.data` is in CuPy: a pointer into device memory, not a buffer NumPy can read."""

    def __init__(self, array):
        self.ptr = id(array._a)
        self.device_id = 0
        self.mem = None

    def __repr__(self):
        return f"<MemoryPointer 0x{self.ptr:x} (stand-in)>"


class ndarray:
    """cupy.ndarray: device memory, with CuPy's rules."""

    __slots__ = ("_a", "__weakref__")
    __array_priority__ = 100

    def __init__(self, shape, dtype=float, memptr=None, strides=None, order="C"):
        self._a = numpy.empty(shape, dtype=dtype, order=order)
        _Pool.allocate(self)

    # ----- attributes -----
    shape = property(lambda self: self._a.shape, lambda self, v: setattr(self._a, "shape", v))
    dtype = property(lambda self: self._a.dtype)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    nbytes = property(lambda self: self._a.nbytes)
    itemsize = property(lambda self: self._a.itemsize)
    strides = property(lambda self: self._a.strides)
    flags = property(lambda self: self._a.flags)
    T = property(lambda self: _wrap(self._a.T))
    mT = property(lambda self: _wrap(self._a.mT))   # new in CuPy 14
    real = property(lambda self: _wrap(self._a.real))
    imag = property(lambda self: _wrap(self._a.imag))
    base = property(lambda self: None if self._a.base is None else _base(self._a.base))
    data = property(lambda self: MemoryPointer(self))
    device = property(lambda self: __import__("cupy").cuda.Device(0))

    # ----- to the host: each one waits for the device -----
    def get(self, stream=None, order="C", out=None, blocking=True):
        record_sync("get")
        record_memcpy("d2h")
        result = numpy.array(self._a, order=order)
        if out is not None:
            out[...] = result
            return out
        return result

    def item(self):
        record_sync("item")
        record_memcpy("d2h")
        return self._a.item()

    def tolist(self):
        record_sync("tolist")
        record_memcpy("d2h")
        return self._a.tolist()

    def tobytes(self, order="C"):
        record_sync("tobytes")
        record_memcpy("d2h")
        return self._a.tobytes(order)

    def nonzero(self):
        record_sync("nonzero")
        record_memcpy("d2h")  # the count of nonzeros, which sizes the result
        result = _wrap(self._a.nonzero())
        record_call("nonzero", (self,), {}, result)
        return result

    def __bool__(self):
        if self.size > 1:
            raise ValueError("The truth value of an array with more than one element is ambiguous. Use a.any() or "
                             "a.all()")
        record_sync("bool")
        record_memcpy("d2h")
        return bool(self._a)

    def __int__(self):
        record_sync("int")
        record_memcpy("d2h")
        return int(self._a)

    def __float__(self):
        record_sync("float")
        record_memcpy("d2h")
        return float(self._a)

    def __complex__(self):
        record_sync("complex")
        record_memcpy("d2h")
        return complex(self._a)

    def __repr__(self):
        record_sync("print")
        return repr(self._a)

    def __str__(self):
        record_sync("print")
        return str(self._a)

    def __format__(self, spec):
        record_sync("print")
        return format(self._a, spec)

    def __reduce__(self):
        return __import__("cupy").array, (self.get(),)

    def __array__(self, dtype=None, copy=None):
        raise TypeError("Implicit conversion to a NumPy array is not allowed. Please use `.get()` to construct a NumPy "
                        "array explicitly.")

    # ----- from the host -----
    def set(self, arr, stream=None):
        if not isinstance(arr, numpy.ndarray):
            raise TypeError(f"Only numpy.ndarray can be set to cupy.ndarray, got {type(arr)}")
        if arr.shape != self.shape:
            raise ValueError(f"Shape mismatch. Old shape: {self.shape}, new shape: {arr.shape}")
        self._a[...] = arr
        record_memcpy("h2d")

    # ----- container -----
    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of unsized object")
        return len(self._a)

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(len(self._a)))

    def __getitem__(self, key):
        result = _wrap(self._a[_index(key)])
        kind = _advanced(key)
        if kind and result.size:
            record_launch(kind, 3 if kind == "mask" else 1)
        return result

    def __setitem__(self, key, value):
        raw = _unwrap(value, host_ok=True)
        kind = _advanced(key)
        if isinstance(value, numpy.ndarray) or isinstance(value, (list, tuple)):
            record_memcpy("h2d")  # CuPy copies host values to the device first
            value = _wrap(numpy.asarray(raw))
        index = _index(key)
        target = self._a[index] if not kind else None
        self._a[index] = raw
        if kind:
            record_launch("mask" if kind == "mask" else "scatter", 3 if kind == "mask" else 1)
        elif not isinstance(value, ndarray):
            for k, n in _fill_launches(_wrap(target), value).items():
                record_launch(k, n)
        elif target.size and not (target.__array_interface__["data"][0] == value._a.__array_interface__["data"][0]
                                  and target.shape == value.shape and target.strides == value.strides):
            same = target.shape == value.shape and target.strides == value.strides
            record_launch("memcpy_d2d" if same and target.flags.c_contiguous and target.dtype == value.dtype
                          else "copy")

    def __copy__(self):
        return self.copy()

    def __deepcopy__(self, memo):
        return self.copy()

    # ----- NumPy's functions on device arrays go to the stand-in's own (as CuPy's NEP 13/18 hooks do) -----
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        mod = sys.modules["cupy"]
        func = getattr(mod, ufunc.__name__, None)
        if not isinstance(func, ufunc_type):
            return NotImplemented
        if "out" in kwargs:
            kwargs["out"] = kwargs["out"][0]
        return func(*inputs, **kwargs) if method == "__call__" else getattr(func, method)(*inputs, **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        target = sys.modules["cupy"]
        for part in func.__module__.split(".")[1:]:
            target = getattr(target, part, None)
        own = getattr(target, func.__name__, None) if target is not None else None
        if own is None or own is func:
            return NotImplemented
        return own(*args, **kwargs)

    def dot(self, b, out=None):
        return sys.modules["cupy"].dot(self, b, out=out)

    def scatter_add(self, slices, value):
        sys.modules["cupyx"].scatter_add(self, slices, value)

    def scatter_max(self, slices, value):
        sys.modules["cupyx"].scatter_max(self, slices, value)

    def scatter_min(self, slices, value):
        sys.modules["cupyx"].scatter_min(self, slices, value)


def _method(name):
    def method(self, *args, **kwargs):
        check_signature(f"cupy.ndarray.{name}", args, kwargs)
        if name in ("sum", "prod", "mean", "max", "min", "argmax", "argmin", "all", "any", "var", "std", "cumsum",
                    "cumprod"):
            refuse_overlap(f"ndarray.{name}", kwargs.get("out"), [self])
        result = _wrap(getattr(self._a, name)(*_unwrap(args, host_ok=True), **_unwrap(kwargs, host_ok=True)))
        if name == "fill":
            for kind, n in _fill_launches(self, args[0] if args else kwargs["value"]).items():
                record_launch(kind, n)
        else:
            record_call(name, (self,) + args, kwargs, result)
        return result
    method.__name__ = name
    return method


# The rest of CuPy's ndarray methods: the same computation as NumPy's, with device arrays in and out.
_SPECIAL = {"get", "item", "tolist", "tobytes", "nonzero", "set", "dot", "scatter_add", "scatter_max", "scatter_min"}
for _name in NAMES["cupy.ndarray"]:
    if not _name.startswith("_") and _name not in _SPECIAL and not hasattr(ndarray, _name):
        if callable(getattr(numpy.ndarray, _name, None)):
            setattr(ndarray, _name, _method(_name))


def _binary(ufunc_name, reflected=False):
    def op(self, other):
        if not isinstance(other, (ndarray,) + _SCALARS) and not isinstance(other, (numpy.ndarray, list, tuple)):
            return NotImplemented  # another type (a Tensor, say) gets its reflected method
        func = getattr(sys.modules["cupy"], ufunc_name)
        return func(other, self) if reflected else func(self, other)
    return op


def _inplace(ufunc_name):
    def op(self, other):
        getattr(sys.modules["cupy"], ufunc_name)(self, other, out=self)
        return self
    return op


for _op, _uf in [("add", "add"), ("sub", "subtract"), ("mul", "multiply"), ("truediv", "true_divide"),
                 ("floordiv", "floor_divide"), ("mod", "remainder"), ("pow", "power"), ("matmul", "matmul"),
                 ("and", "bitwise_and"), ("or", "bitwise_or"), ("xor", "bitwise_xor"), ("lshift", "left_shift"),
                 ("rshift", "right_shift")]:
    setattr(ndarray, f"__{_op}__", _binary(_uf))
    setattr(ndarray, f"__r{_op}__", _binary(_uf, reflected=True))
    if _op != "matmul":
        setattr(ndarray, f"__i{_op}__", _inplace(_uf))
for _op, _uf in [("lt", "less"), ("le", "less_equal"), ("gt", "greater"), ("ge", "greater_equal"),
                 ("eq", "equal"), ("ne", "not_equal")]:
    setattr(ndarray, f"__{_op}__", _binary(_uf))
ndarray.__hash__ = None
ndarray.__neg__ = lambda self: sys.modules["cupy"].negative(self)
ndarray.__pos__ = lambda self: sys.modules["cupy"].positive(self)
ndarray.__abs__ = lambda self: sys.modules["cupy"].absolute(self)
ndarray.__invert__ = lambda self: sys.modules["cupy"].invert(self)


_KIND_SCORE = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}
_LOOP_CHARS = set("?bBhHiIlLqQefdFD")   # the dtypes CuPy's ufuncs have loops for


def _scalar_dtype(x):
    """CuPy 14.2's CScalar (_scalar.pyx): (dtype, weak type). A Python scalar is weak (bool, int -> int64 or uint64
    from 2**63, float -> float64, complex -> complex128); a NumPy scalar is strong, typed by its dtype."""
    if type(x) is bool:
        return numpy.dtype(bool), False
    if isinstance(x, numpy.generic):
        return x.dtype, False
    if type(x) is int:
        return numpy.dtype(numpy.uint64 if x >= 0x8000000000000000 else numpy.int64), int
    if type(x) in (float, complex):
        return numpy.dtype(type(x)), type(x)
    return numpy.asarray(x).dtype, False


def _weak_ok(weak, loop_dtype):
    """_guess_routine_from_in_types: a weak scalar fits a loop type when NumPy 2 keeps that type beside it."""
    try:
        return numpy.result_type(weak(0), loop_dtype) == loop_dtype
    except TypeError:
        return False


def _first_loop(loops, in_types, weaks):
    """The first loop (CuPy's order) each input casts to safely, or, for a weak scalar, whose type NumPy 2 keeps."""
    for loop in loops:
        dtypes = [numpy.dtype(c) for c in loop.split("->")[0]]
        if all(numpy.can_cast(t, d) or w and _weak_ok(w, d) for t, d, w in zip(in_types, dtypes, weaks)):
            return dtypes
    return None


_SCATTER_UFUNCS = {"add", "subtract", "bitwise_and", "bitwise_or", "bitwise_xor"}  # with a scatter_op in 14.2


class ufunc:
    """cupy.ufunc: an elementwise kernel; its operands must be device arrays or scalars."""

    def __init__(self, np_ufunc):
        self._f = np_ufunc
        self.__name__ = np_ufunc.__name__
        self.nin, self.nout, self.nargs = np_ufunc.nin, np_ufunc.nout, np_ufunc.nargs

    def __repr__(self):
        return f"<ufunc '{self.__name__}'>"

    @property
    def types(self):
        return self._f.types

    def __call__(self, *args, out=None, **kwargs):
        if set(kwargs) - {"dtype", "casting"}:   # CuPy 14.2's ufunc.__call__ takes out, dtype and casting only
            raise TypeError(f"Wrong arguments {kwargs}")
        trace = getattr(fusion_state, "trace", None)
        if trace is not None:
            return trace.ufunc(self._op, args, out, kwargs)
        operands = args
        args = [_kernel_arg(a) for a in args]
        if kwargs.get("dtype") is None and self.__name__ != "matmul":
            args = self._cupy_typed(args)
        if out is not None:
            kwargs["out"] = _kernel_arg(out) if not isinstance(out, tuple) else tuple(_kernel_arg(o) for o in out)
        result = self._f(*args, **kwargs) if self.__name__ != "matmul" else _cublas_matmul(args, kwargs)
        if self.__name__ == "matmul":  # cupy.matmul is cuBLAS behind a ufunc's interface
            for kind, n in _matmul_launches(operands).items():
                record_launch(kind, n)
        elif numpy.size(result[0] if isinstance(result, tuple) else result):
            record_launch("elementwise")
            # CuPy copies an input that overlaps an output and is not that very array object first
            outs = [o for o in (out if isinstance(out, tuple) else (out,)) if isinstance(o, ndarray)]
            record_launch("copy", sum(1 for a in operands if isinstance(a, ndarray) and
                                      any(a is not o and overlaps(a, o) for o in outs)))
        return out if out is not None and not isinstance(out, tuple) else _wrap(result)

    def _cupy_typed(self, args):
        """The scalar operands typed as CuPy 14.2 types them (NEP 50, as NumPy 2; _kernel.pyx guess_routine and
        _check_should_use_weak_scalar, _scalar.pyx CScalar), as 0-d arrays of the chosen loop's types: a NumPy
        scalar is strong (its dtype counts: float32 * numpy.float64(0.5) is float64); a Python scalar is weak when
        its kind (bool < int < float < complex) is not above the arrays' (float16 + 1e5 is float16, inf), else a
        strong int64/float64/complex128 (int32 + 1.5 is float64). The value is then stored in the loop's type by
        NumPy's assignment, which refuses an int out of its range (int8 + 300: OverflowError)."""
        scalars = [a for a in args if not isinstance(a, numpy.ndarray)]
        if not scalars or len(scalars) == len(args):
            return args   # arrays only, or scalars only: CuPy and NumPy 2 agree
        typed = [(a.dtype, False) if isinstance(a, numpy.ndarray) else _scalar_dtype(a) for a in args]
        max_array = max(_KIND_SCORE[t.kind] for t, w in typed if not w)
        max_weak = max([_KIND_SCORE[numpy.dtype(w).kind] for t, w in typed if w], default=-1)
        if max_weak > max_array:
            typed = [(t, False) for t, w in typed]   # a weak scalar of a higher kind counts by its own type
        loops = [t for t in self._f.types if set(t.replace("->", "")) <= _LOOP_CHARS]
        dtypes = _first_loop(loops, [t for t, w in typed], [w for t, w in typed])
        if dtypes is None:
            raise TypeError(f"Wrong type ({tuple(t for t, w in typed)}) of arguments for cupy_{self.__name__}")
        return [a if isinstance(a, numpy.ndarray) else numpy.asarray(a, dtype=d) for a, d in zip(args, dtypes)]

    def at(self, a, indices, b=None):
        if self.__name__ not in _SCATTER_UFUNCS:
            raise NotImplementedError(f"`{self.__name__}.at` is not supported yet")
        if not isinstance(a, ndarray):
            raise _unsupported(a)
        self._f.at(a._a, _index(indices), *(() if b is None else (_kernel_arg(b),)))
        record_launch("scatter")

    @property
    def _op(self):
        from ._fusion import _ufunc_op
        return _ufunc_op(self._f)

    def _reduction(self, method, array, *args, **kwargs):
        refuse_overlap(f"cupy.{self.__name__}.{method}", kwargs.get("out"), [array])
        if getattr(fusion_state, "trace", None) is not None:
            raise NotImplementedError(f"{self.__name__}.{method} cannot be used inside cupy.fuse: its reductions are "
                                      "cupy.sum, prod, max, min, all, any, nansum, nanprod")
        if not isinstance(array, ndarray):
            raise _unsupported(array)
        if kwargs.get("out") is not None:
            kwargs["out"] = _kernel_arg(kwargs["out"])
        result = _wrap(getattr(self._f, method)(array._a, *_unwrap(args), **kwargs))
        record_launch("scan" if method == "accumulate" else "reduction")
        return result

    def reduce(self, array, axis=0, dtype=None, out=None, keepdims=False):
        if self.__name__ not in ("add", "multiply"):   # CuPy 14.2's ufunc.reduce is sum or prod
            raise NotImplementedError(f"`{self.__name__}.reduce` is not supported yet (CuPy 14.2: add and multiply "
                                      "only; use cupy.max, cupy.min, ...)")
        return self._reduction("reduce", array, axis=axis, dtype=dtype, out=out, keepdims=keepdims)

    def accumulate(self, array, axis=0, dtype=None, out=None):
        if self.__name__ not in ("add", "multiply"):   # CuPy 14.2's ufunc.accumulate is cumsum or cumprod
            raise NotImplementedError(f"accumulate is not supported for ufunc '{self.__name__}' in CuPy 14.2 (only "
                                      "add and multiply)")
        return self._reduction("accumulate", array, axis=axis, dtype=dtype, out=out)

    def reduceat(self, array, indices, axis=0, dtype=None, out=None):
        if self.__name__ != "add":
            raise NotImplementedError(f"reduceat is not supported for ufunc '{self.__name__}' in CuPy 14.2 (only add)")
        return self._reduction("reduceat", array, _unwrap(indices, host_ok=True), axis=axis, dtype=dtype, out=out)

    def outer(self, A, B, **kwargs):
        result = _wrap(self._f.outer(_kernel_arg(A), _kernel_arg(B), **kwargs))
        record_launch("elementwise")
        return result


ufunc_type = ufunc


# ----- cuBLAS's compute types (cupy/_core/_routines_linalg.pyx: get_compute_type, set_compute_type) -----
COMPUTE_TYPE_DEFAULT, COMPUTE_TYPE_TF32 = 1, 7   # (cdef enum values in _routines_linalg.pxd; CuPy exports none)
_compute_types = {}   # dtype char -> compute type, fixed at the first product of that dtype as CuPy fixes it


def get_compute_type(dtype):
    """CuPy's get_compute_type: the type set for dtype, else DEFAULT, or TF32 for float32 when the environment
    variable CUPY_TF32 is > 0 when first asked (then remembered, as CuPy remembers it)."""
    char = numpy.dtype(dtype).char
    if char not in _compute_types:
        tf32 = char in "fF" and int(os.environ.get("CUPY_TF32", "0")) > 0
        _compute_types[char] = COMPUTE_TYPE_TF32 if tf32 else COMPUTE_TYPE_DEFAULT
    return _compute_types[char]


def set_compute_type(dtype, compute_type):
    """CuPy's set_compute_type (the stand-in's GPU counts as compute capability 9.0: TF32 is kept)."""
    if compute_type not in range(1, 8):
        raise ValueError(f"Unknown compute type: {compute_type}")
    _compute_types[numpy.dtype(dtype).char] = compute_type


def _tf32(a):
    """float32 values rounded to TF32's 10-bit mantissa (to nearest), as tensor cores read them."""
    bits = numpy.ascontiguousarray(a, dtype=numpy.float32).view(numpy.uint32)
    return ((bits + numpy.uint32(0x1000)) & numpy.uint32(0xFFFFE000)).view(numpy.float32)


def _cublas_matmul(args, kwargs):
    """numpy.matmul as cuBLAS computes it: float16 operands multiplied in float32 and rounded once
    (CUBLAS_COMPUTE_32F; NumPy's float16 product is a slow loop), float32 ones read as TF32 under COMPUTE_TYPE_TF32
    (CUBLAS_COMPUTE_32F_FAST_TF32)."""
    arrays = [a for a in args if isinstance(a, numpy.ndarray)]
    if len(arrays) == 2 and all(a.dtype == numpy.float16 for a in arrays):
        out = kwargs.pop("out", None)
        result = numpy.matmul(*(a.astype(numpy.float32) for a in args), **kwargs).astype(numpy.float16)
        if out is not None:
            out[...] = result
            return out
        return result
    if len(arrays) == 2 and all(a.dtype == numpy.float32 for a in arrays) and \
            get_compute_type(numpy.float32) == COMPUTE_TYPE_TF32:
        return numpy.matmul(*(_tf32(a) for a in args), **kwargs)
    return numpy.matmul(*args, **kwargs)
