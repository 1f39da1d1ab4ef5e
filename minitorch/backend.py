"""The array backend: NumPy on the CPU, CuPy on the GPU, behind one small interface.

This is the only file that imports cupy. Every other file asks here for the array module (`xp`) of a device or of an
array, so the same op code runs on both.
"""
import collections
import importlib

import numpy as np

from . import meta

try:  # CuPy is an optional extra; without it only the CPU exists.
    import cupy as _cp
except Exception:  # ImportError, or a broken CUDA install that fails at import
    _cp = None

DEVICES = ("cpu", "cuda")
_cuda_checked = None  # None: not tried yet; True: usable; str: why not


def _cuda_problem():
    """None when CuPy and a GPU are usable, else a sentence saying what is missing."""
    global _cuda_checked
    if _cuda_checked is None:
        if _cp is None:
            _cuda_checked = ("CuPy is not installed; install it with its CUDA libraries for the CUDA version that "
                             "nvidia-smi shows: `pip install -e '.[gpu-cuda12]'` (CUDA 12) or "
                             "`pip install -e '.[gpu-cuda13]'` (CUDA 13); see the README's GPU section")
        else:
            try:
                n = _cp.cuda.runtime.getDeviceCount()
                _cuda_checked = True if n > 0 else "CuPy is installed but no GPU was found"
            except Exception as e:  # no driver, no device
                _cuda_checked = f"CuPy is installed but no usable GPU was found ({type(e).__name__}: {e})"
    return None if _cuda_checked is True else _cuda_checked


def cuda_available():
    """True when device='cuda' can be used."""
    return _cuda_problem() is None


def check_device(device):
    """Normalise a device name ('cpu', 'cuda', 'cuda:N' for the current GPU N) and raise a clear error when it cannot
    be used. The engine runs on one GPU, the current one: 'cuda:N' for another is refused, not silently replaced.
    None is the default device (set_default_device), so callers need not spell out that fallback."""
    given = str(default_device if device is None else device)
    if given == "meta":   # shapes and dtypes without values (meta.py)
        return given
    device, _, index = given.partition(":")
    if device not in DEVICES or (index and (device != "cuda" or not index.isdigit())):
        raise ValueError(f"unknown device {given!r}; expected one of {DEVICES}, 'cuda:N' or 'meta'")
    if device == "cuda":
        problem = _cuda_problem()
        if problem:
            raise RuntimeError(f"device='cuda' is not available: {problem}")
        current = _cp.cuda.Device().id if index else None
        if index and int(index) != current:
            raise ValueError(f"device {given!r}: minitorch runs on one GPU, this process's current one "
                             f"(cuda:{current}); to use GPU {index}, start the process with "
                             f"CUDA_VISIBLE_DEVICES={index} and pass 'cuda'")
    return device


default_device = "cpu"   # where factories put a tensor that names no device (set_default_device)


def set_default_device(device):
    """Make factories (zeros, randn, tensor, ...) and new layers' weights go to device unless they name one."""
    global default_device
    default_device = check_device(device if device is not None else "cpu")


def get_default_device():
    """The device that factories use when they name none ("cpu" unless set_default_device changed it)."""
    return default_device


_META = meta.MetaArray   # (one global read in _xp_of_other and _device_of_other)


def xp_of_device(device):
    """The array module (numpy, cupy, or the meta device's: meta.xp) for a device name."""
    return _cp if device == "cuda" else np if device != "meta" else meta.xp


def device_of(array):
    """'cuda' for a cupy array, 'meta' for a meta.MetaArray, else 'cpu'."""
    return "cpu" if type(array) is np.ndarray else _device_of_other(array)   # (NumPy's first: every op asks)


def _device_of_other(array):
    return "cuda" if _cp is not None and isinstance(array, _cp.ndarray) else "meta" if type(array) is _META else "cpu"


def xp_of(array):
    """The array module (numpy, cupy or meta.xp) that owns an array."""
    return np if type(array) is np.ndarray else _xp_of_other(array)


def _xp_of_other(array):
    return _cp if _cp is not None and isinstance(array, _cp.ndarray) else meta.xp if type(array) is _META else np


# what is_array accepts
ARRAY_TYPES = (np.ndarray, meta.MetaArray) if _cp is None else (np.ndarray, _cp.ndarray, meta.MetaArray)


def is_array(obj):
    return isinstance(obj, ARRAY_TYPES)


def to_device(array, device):
    """Move an array to a device (no copy when it is already there); to "meta" it keeps its shape and dtype only."""
    if type(array) is meta.MetaArray and device != "meta":
        raise NotImplementedError("Cannot copy out of meta tensor; no data! (a meta tensor has a shape and a dtype, "
                                  "no values: make the tensor on the device instead)")
    if device == "meta":
        return meta.xp.asarray(array)
    if device == "cuda":
        check_device("cuda")
        return _cp.asarray(array)
    if _cp is not None and isinstance(array, _cp.ndarray):
        return _cp.asnumpy(array)
    return np.asarray(array)


def to_numpy(array):
    """A host NumPy array (a copy when the array lives on the GPU)."""
    if type(array) is meta.MetaArray:
        raise TypeError("can't convert a meta tensor to NumPy: it has a shape and a dtype, no values")
    return _cp.asnumpy(array) if device_of(array) == "cuda" else np.asarray(array)


def out_of_range(ids, high, ignore=None):
    """(lowest, highest) of a host integer array when a value lies outside [0, high) (values equal to ignore left out),
    else None. A device array is not read, and gives None: reading it would make the host wait for the GPU, so the
    callers check ids while they are still on the host, before they move them (models, the batcher, the loss)."""
    if device_of(ids) != "cpu" or ids.size == 0:
        return None
    if ignore is not None:
        ids = ids[ids != ignore]
        if ids.size == 0:
            return None
    low, high_seen = int(ids.min()), int(ids.max())
    return (low, high_seen) if low < 0 or high_seen >= high else None


def synchronize(device):
    """Wait until the device has finished the work queued on it (GPU calls return early); nothing on the CPU."""
    if device == "cuda":
        _cp.cuda.Device().synchronize()


def device_memory(device, release=False):
    """(bytes in use, bytes held) by CuPy's default memory pool; (0, 0) on the CPU.

    The pool keeps freed blocks for reuse, so `held` is the high-water mark of what was in use at once (rounded up
    to blocks). release=True first hands the unused blocks back to the driver, which restarts that mark.
    """
    if device != "cuda":
        return 0, 0
    pool = _cp.get_default_memory_pool()
    if release:
        pool.free_all_blocks()
    return pool.used_bytes(), pool.total_bytes()


def scatter_add(target, indices, values):
    """target[indices] += values, where repeated indices add up (unlike plain fancy assignment); the same bits on
    every run, on the GPU too (for float targets indexed by integer arrays: see _onehot_add)."""
    if device_of(target) == "cuda":
        import cupyx  # ships with cupy
        parts = indices if isinstance(indices, tuple) else (indices,)
        if target.dtype.kind == "f" and all(isinstance(i, _cp.ndarray) and i.dtype.kind in "iu" for i in parts):
            _onehot_add(target, parts, values)
        else:
            cupyx.scatter_add(target, indices, values)   # exact (integers), or not an integer-array index
    else:
        np.add.at(target, indices, values)
    return target


ONEHOT_MAX = 1 << 26   # elements of the largest one-hot (V, N) matrix made at once (256 MB in float32)


def _onehot_add(target, parts, values):
    """target[parts] += values on the GPU, deterministically and in a few launches: the rows of `values` (N, d) summed
    per index as one matrix product, target += onehot @ rows, with onehot (V, N) = (index == row number) made in
    values' dtype by one fused kernel (V: the rows of target). cupyx.scatter_add adds with atomics in no fixed
    order, so its float sums vary in the last bits between runs (a resumed run would drift from an uninterrupted
    one); cuBLAS sums in a fixed order on a given GPU, and the one-hot's products are exact (1 * x, 0 * x).

    Why a product and not a sorted segment sum: CuPy has no segment sum, so one is an argsort, gathers and a prefix
    sum (float64, or float32 sums of many rows lose their small terms in the differences): 17 launches a call as the
    stand-in counted them under CuPy 13.6's rules, and a float64 (N, d) buffer for the Embedding's gradient. The
    product is three launches (one-hot, matmul, add) and no host wait; its costs are the one-hot, V x N elements
    (the `small` preset: 4000 x 4096, 66 MB in float32, freed after the call), and 2 V N d FLOPs (17 GFLOP a step
    for both embeddings there, a tenth of the step's matmuls: well under a millisecond on a GPU, where that step is
    bound by launches). Larger products are made in pieces of N of at most ONEHOT_MAX elements (the same bits run to
    run: a fixed order of fixed products). Under CUPY_TF32=1 cuBLAS would round `values` to TF32, as it does every
    matmul's operands."""
    xp = _cp
    k = len(parts)
    parts = xp.broadcast_arrays(*parts)
    n = parts[0].size
    if n == 0:
        return
    row_shape = target.shape[k:]
    flat = parts[0].reshape(1, n)
    if k > 1:   # several index arrays: one linear index into the first k axes (negative ones wrapped first)
        flat = flat % target.shape[0]
        for axis in range(1, k):
            flat = flat * target.shape[axis] + parts[axis].reshape(1, n) % target.shape[axis]
    n_rows = int(np.prod(target.shape[:k]))
    rows = xp.broadcast_to(xp.asarray(values, dtype=target.dtype), parts[0].shape + row_shape).reshape(n, -1)
    one, step, total = target.dtype.type(1), max(1, ONEHOT_MAX // max(n_rows, 1)), None
    for i in range(0, n, step):
        piece = _onehot(_row_numbers(n_rows, flat.dtype), flat[:, i:i + step], n_rows, one) @ rows[i:i + step]
        total = piece if total is None else total + piece
    target += total.reshape(target.shape)


def fuse(body):
    """A kernel made of body(xp, *args): on CuPy arrays one launch (`cupy.fuse`), on NumPy arrays a plain call.

    body is written once with `xp`'s ufuncs, operators, in-place updates of its array arguments (`p -= ...`) and at
    most one trailing reduction (`xp.sum(..., axis=...)`), the rules of `cupy.fuse`; its arguments are arrays of one
    device and scalars. The same body therefore runs on NumPy (the CPU, and the tests' reference) and on the GPU,
    where the CuPy stand-in in tests/ executes it under CuPy's rules, so CI runs every kernel's code.
    """
    kernels = {}

    def call(*args):
        if _cp is None or not any(isinstance(a, _cp.ndarray) for a in args):
            return body(np, *args)
        if "cuda" not in kernels:
            kernels["cuda"] = _cp.fuse(cuda_body(body, _cp))
        return kernels["cuda"](*args)

    call.body = body
    call.__name__, call.__qualname__, call.__module__, call.__doc__ = (
        body.__name__, body.__qualname__, body.__module__, body.__doc__)
    FUSED[f"{body.__module__}.{body.__qualname__}"] = call
    return call


# Every fuse kernel by "module.qualname": scripts/cuda_sources.py builds each one as CuPy compiles it.
FUSED = {}


def cuda_body(body, cp):
    """body(xp, *args) as the function of args that cupy.fuse traces, named as body (the kernel's name in CUDA)."""
    def kernel(*a):
        return body(cp, *a)
    kernel.__name__, kernel.__qualname__, kernel.__module__ = body.__name__, body.__qualname__, body.__module__
    return kernel


# Random numbers: one generator per device, reseeded together by manual_seed.
_generators = {}
_seed = None
_handed_out = collections.Counter()   # rng(device) calls: every draw asks for the generator anew


def rng_uses(device):
    """How often rng(device) has handed out the generator: unchanged means nothing was drawn in between."""
    return _handed_out[device]


def manual_seed(seed):
    """Seed the random generators of every device (parameter init, dropout, randn)."""
    global _seed
    _seed = int(seed)
    _generators.clear()
    _handed_out.update(DEVICES)   # new generators: a copy of an old one's state is stale


def rng(device="cpu"):
    """The random Generator of a device (numpy.random.Generator or cupy.random.Generator)."""
    _handed_out[device] += 1
    if device not in _generators:
        _generators[device] = xp_of_device(device).random.default_rng(_seed)
    return _generators[device]


def get_rng_state():
    """The state of each device's generator made so far, for checkpoints that resume exactly: {"cpu": NumPy's
    bit-generator state (a dict), "cuda": CuPy's generator state as a host uint8 array (its cuRAND states)}."""
    state = {"cpu": rng("cpu").bit_generator.state}
    if "cuda" in _generators:
        state["cuda"] = to_numpy(_cuda_state(_generators["cuda"])).view(np.uint8)
    return state


def set_rng_state(state, device="cpu"):
    """Restore what get_rng_state() returned (or a bare CPU state, as older checkpoints hold) for the CPU and device.
    Returns whether device's generator was restored: False when the state holds none for it, or one from a GPU of
    another size (CuPy keeps one cuRAND state per GPU thread), and that generator keeps the current seed's stream."""
    if "bit_generator" in state:  # the CPU state alone
        state = {"cpu": state}
    rng("cpu").bit_generator.state = state["cpu"]
    if device == "cpu":
        return True
    saved, device_state = state.get(device), _cuda_state(rng(device))
    if saved is None or saved.size != device_state.nbytes:
        return False
    device_state[...] = _cp.asarray(np.ascontiguousarray(saved).view(device_state.dtype))
    return True


def _cuda_state(generator):
    """The device array that holds a CuPy generator's whole state (cupy.random's cuRAND states, `_state`)."""
    state = getattr(generator.bit_generator, "_state", None)
    if state is None:
        raise RuntimeError("this CuPy keeps its random generator's state where minitorch does not look "
                           "(bit_generator._state); resuming exactly on the GPU needs CuPy 14 (14.2 keeps it there)")
    return state


# TF32: cuBLAS may read float32 operands as TF32 (10-bit mantissa) on tensor cores, an opt-in as in PyTorch.
# CuPy picks a product's compute type with get_compute_type(dtype) (cupy/_core/_routines_linalg.pyx): DEFAULT
# (CUBLAS_COMPUTE_32F for float32 and float16) unless set_compute_type changed it or CUPY_TF32=1 was in the environment
# at the first float32 product; the types are a cdef enum that CuPy does not export, so they are named here.
COMPUTE_TYPE_DEFAULT, COMPUTE_TYPE_TF32 = 1, 7


def set_tf32(enabled):
    """Let cuBLAS compute float32 products in TF32 (enabled) or in full float32; RuntimeError without a GPU. CuPy
    falls back to full float32, with a warning, on GPUs older than compute capability 8.0."""
    check_device("cuda")
    _cp._core.set_compute_type(np.float32, COMPUTE_TYPE_TF32 if enabled else COMPUTE_TYPE_DEFAULT)


def tf32_enabled():
    """Whether CuPy computes float32 products in TF32 (False without a GPU)."""
    return cuda_available() and _cp._core.get_compute_type(np.float32) == COMPUTE_TYPE_TF32


# GPUs for data-parallel jobs: one device per process, and NCCL to reduce across them.
def gpu_count():
    """The number of CUDA devices CuPy sees (0 without CuPy or a GPU)."""
    if not cuda_available():
        return 0
    return _cp.cuda.runtime.getDeviceCount()


def gpu_info():
    """Facts about this process's GPU and CuPy: {name, compute_capability, memory_bytes, cupy, cuda_runtime,
    cuda_driver} (versions as "12.8"); RuntimeError saying what is missing when device='cuda' cannot be used."""
    check_device("cuda")

    def version(v):
        return f"{v // 1000}.{v % 1000 // 10}"
    runtime = _cp.cuda.runtime
    props = runtime.getDeviceProperties(_cp.cuda.Device().id)
    name = props["name"]
    return {"name": name.decode() if isinstance(name, bytes) else str(name),
            "compute_capability": f"{props['major']}.{props['minor']}", "memory_bytes": int(props["totalGlobalMem"]),
            "cupy": _cp.__version__, "cuda_runtime": version(runtime.runtimeGetVersion()),
            "cuda_driver": version(runtime.driverGetVersion())}


def use_gpu(index):
    """Make GPU `index` this process's "cuda" device (before anything is allocated on a GPU)."""
    _cp.cuda.Device(index).use()


def gpu_bus_id():
    """The PCI bus id of this process's current GPU (tells whether two processes share one GPU)."""
    return _cp.cuda.Device().pci_bus_id


def nccl():
    """CuPy's NCCL module (cupy.cuda.nccl); RuntimeError when this CuPy was built without NCCL."""
    try:
        module = importlib.import_module("cupy.cuda.nccl")
    except ImportError as e:
        raise RuntimeError(f"NCCL is not available in this CuPy ({e}); install NCCL for data-parallel GPU jobs") \
            from None
    if not getattr(module, "available", True):
        raise RuntimeError("this CuPy was built without NCCL; data-parallel GPU jobs need it")
    return module


_row_number_cache = {}


def _row_numbers(n_rows, dtype):
    """(n_rows, 1) device array 0, 1, ..., n_rows - 1, made once per size (an arange would be a launch per call)."""
    key = (_cp.cuda.Device().id, n_rows, np.dtype(dtype).str)
    if key not in _row_number_cache:
        _row_number_cache[key] = _cp.arange(n_rows, dtype=dtype).reshape(n_rows, 1)
    return _row_number_cache[key]


@fuse
def _onehot(xp, row, index, n_rows, one):
    """(V, N) one-hot in one's dtype: 1 where row number == index (negative indices counted from the end), else 0."""
    return ((row == index) | (row == index + n_rows)) * one   # (scatter_add's kernel: defined after fuse)


def array_of(x):
    """x's array if x is a Tensor (known by its version counter: this module is below the core), else x as it is."""
    return x.data if hasattr(x, "_version_counter") else x
