"""The array backend: NumPy on the CPU, CuPy on the GPU, behind one small interface.

This is the only file that imports cupy. Every other file asks here for the array module (`xp`) of a device or of an
array, so the same op code runs on both.
"""
import importlib

import numpy as np

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
            _cuda_checked = ("CuPy is not installed; install the wheel for your CUDA version (nvidia-smi shows it): "
                             "`pip install -e '.[gpu]'` (cupy-cuda12x, CUDA 12) or `pip install cupy-cuda13x` "
                             "(CUDA 13); see the README's GPU section")
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
    """Normalise a device name ('cpu', 'cuda', 'cuda:0') and raise a clear error when it cannot be used."""
    device = str(device)
    if device.startswith("cuda"):
        device = "cuda"
    if device not in DEVICES:
        raise ValueError(f"unknown device {device!r}; expected one of {DEVICES}")
    if device == "cuda":
        problem = _cuda_problem()
        if problem:
            raise RuntimeError(f"device='cuda' is not available: {problem}")
    return device


def xp_of_device(device):
    """The array module (numpy or cupy) for a device name."""
    return _cp if device == "cuda" else np


def device_of(array):
    """'cuda' for a cupy array, else 'cpu'."""
    return "cuda" if _cp is not None and isinstance(array, _cp.ndarray) else "cpu"


def xp_of(array):
    """The array module (numpy or cupy) that owns an array."""
    return _cp if _cp is not None and isinstance(array, _cp.ndarray) else np


def is_array(obj):
    return isinstance(obj, np.ndarray) or (_cp is not None and isinstance(obj, _cp.ndarray))


def to_device(array, device):
    """Move an array to a device (no copy when it is already there)."""
    if device == "cuda":
        check_device("cuda")
        return _cp.asarray(array)
    if _cp is not None and isinstance(array, _cp.ndarray):
        return _cp.asnumpy(array)
    return np.asarray(array)


def to_numpy(array):
    """A host NumPy array (a copy when the array lives on the GPU)."""
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
    every run, on the GPU too (for float targets indexed by integer arrays: see _segment_sum_add)."""
    if device_of(target) == "cuda":
        import cupyx  # ships with cupy
        parts = indices if isinstance(indices, tuple) else (indices,)
        if target.dtype.kind == "f" and all(isinstance(i, _cp.ndarray) and i.dtype.kind in "iu" for i in parts):
            _segment_sum_add(target, parts, values)
        else:
            cupyx.scatter_add(target, indices, values)   # exact (integers), or not an integer-array index
    else:
        np.add.at(target, indices, values)
    return target


def _segment_sum_add(target, parts, values):
    """target[parts] += values on the GPU, deterministically. cupyx.scatter_add adds with atomics in no fixed order,
    so its float sums vary in the last bits between runs (and a resumed run would drift from an uninterrupted one).
    Here the rows are sorted by index and summed as differences of one float64 prefix sum over the sorted rows, P:
    a run of equal indices from i to j sums to P[j+1] - P[i]. Each index then receives at most two non-zero terms
    (P[j+1] at its run's end, -P[i] at its start; -0.0, which changes nothing, elsewhere), and two terms add to the
    same bits in either order."""
    import cupyx
    xp = _cp
    k = len(parts)
    parts = xp.broadcast_arrays(*parts)
    n = parts[0].size
    if n == 0:
        return
    row_shape = target.shape[k:]
    flat = parts[0].reshape(n) % target.shape[0]
    for axis in range(1, k):   # several index arrays: one linear index into the first k axes
        flat = flat * target.shape[axis] + parts[axis].reshape(n) % target.shape[axis]
    rows = xp.broadcast_to(xp.asarray(values), parts[0].shape + row_shape).reshape(n, -1)
    order = xp.argsort(flat)
    keys, rows = flat[order], rows[order]
    prefix = xp.empty((n + 1, rows.shape[1]), dtype=xp.float64)
    prefix[0] = 0
    xp.cumsum(rows, axis=0, dtype=xp.float64, out=prefix[1:])
    change = keys[1:] != keys[:-1]
    start, end = xp.ones(n, dtype=bool), xp.ones(n, dtype=bool)
    start[1:], end[:-1] = change, change
    terms = _run_terms(start[:, None], end[:, None], prefix[:-1], prefix[1:])
    total = xp.zeros((int(np.prod(target.shape[:k])), rows.shape[1]), dtype=xp.float64)
    cupyx.scatter_add(total, keys, terms)
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
            def kernel(*a):
                return body(_cp, *a)
            kernel.__name__ = kernel.__qualname__ = body.__name__
            kernels["cuda"] = _cp.fuse(kernel)
        return kernels["cuda"](*args)

    call.body = body
    call.__name__, call.__doc__ = body.__name__, body.__doc__
    return call


# Random numbers: one generator per device, reseeded together by manual_seed.
_generators = {}
_seed = None


def manual_seed(seed):
    """Seed the random generators of every device (parameter init, dropout, randn)."""
    global _seed
    _seed = int(seed)
    _generators.clear()


def rng(device="cpu"):
    """The random Generator of a device (numpy.random.Generator or cupy.random.Generator)."""
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


@fuse
def _run_terms(xp, start, end, before, through):
    """A row's terms of its index's run sum: P[j+1] at the run's end, -P[i] at its start, -0.0 (no change) else."""
    return xp.where(end, through, -0.0) - xp.where(start, before, 0.0)   # (scatter_add's kernel: defined after fuse)
