"""Every fuse kernel built as CuPy 14.2 builds it, without a GPU: traced by the real CuPy, linted, compiled by NVRTC.

The CuPy stand-in (tests/cupy_standin) runs a fused body eagerly on NumPy arrays, so it cannot see how CuPy turns the
body into CUDA. This script asks the real CuPy. It needs `pip install -e '.[gpu-build]'` (CuPy for CUDA 13 and the
NVRTC and CUDA-runtime wheels: a compiler and headers, no GPU and no driver):

    python3 scripts/cuda_sources.py build SIGNATURES.json [--arch 90 --arch 75] [--sources DIR] [--jobs 2]

SIGNATURES.json maps each kernel ("module.qualname" of its body, as `minitorch.backend.FUSED` names it) to the
argument signatures it was called with (the stand-in's `cupy._standin.FUSED_CALLS`: dtype, shape and strides of each
array, the type of each scalar). For each signature:
1. CuPy's first fusion (`cupy.fuse`, cupy/_core/fusion.pyx) traces the body on arrays that point at no memory into
   its ElementwiseKernel or ReductionKernel; a body it refuses at any signature is a failure naming the kernel and
   the signature: CuPy would hand that call, and every later call of the same cupy.fuse object at any signature, to
   its experimental second fusion.
2. The kernel's CUDA source is made by CuPy's own code: a ReductionKernel through its `_call` (CuPy's axis, block
   size and CUB choices), an ElementwiseKernel through `_get_elementwise_kernel` after the few lines of its
   `__call__` that follow `cudaGetDevice` (broadcast, parameter types, CuPy's dimension merging), done here. The
   per-device memoised helpers are called unwrapped, and the last step, `_compile_module_with_cache`, is where the
   source and CuPy's compiler options are taken; it answers with a module whose functions launch nothing, so that
   CuPy goes on to the next module it compiles: the second pass of a CUB reduction (-DSECOND_PASS=1).
3. Lint: a pre-map (the part of a reduction before the reduction) takes its arguments by value, so an assignment to
   one is silently lost (`x[...] = v` in a body that ends in `xp.sum`); such a write is a failure.
4. Each distinct module (source and CuPy's options) is compiled by NVRTC with CuPy's options (`-ftz=true`,
   `--device-as-default-execution-space`) for each architecture: sm_90 (the H100/H200) and the oldest in NVRTC's
   supported list (sm_75 for CUDA 13).

It prints one line per failure and a summary, and exits 1 when anything failed (2: CuPy, NVRTC or the CUDA headers
are missing, with one line saying which). `device SIGNATURES.json --sources DIR` runs each signature on a real GPU
and writes the sources CuPy compiled there, for scripts/gpu_check.sh to compare with `build --sources`.
"""
import argparse
import collections
import concurrent.futures
import hashlib
import importlib
import json
import os
import re
import sys
import time

import numpy

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KERNEL_MODULES = ("minitorch.kernels", "minitorch.optim", "minitorch.nn")   # where fuse kernels live
GPU_ARCH = "90"   # the H100/H200


def default_archs():
    """sm_90 and the oldest architecture this NVRTC compiles for (its getSupportedArchs: 75, Turing, for CUDA 13)."""
    from cupy.cuda import nvrtc
    return [GPU_ARCH, str(min(nvrtc.getSupportedArchs()))]
NVRTC_OPTIONS = ("-ftz=true", "--device-as-default-execution-space")   # cupy/cuda/compiler.py adds these two
_ARG_NDARRAY, _ARG_INDEXER, _ARG_SCALAR = 1, 2, 3   # cupy/_core/_kernel.pxd, _ArgKind


_CAPTURED = []   # (source, options) of each module CuPy asked to compile, in order, since the last trace


def missing():
    """None when the real CuPy, NVRTC and the CUDA headers are usable here, else a line saying what is missing."""
    try:
        import cupy
    except Exception as e:  # not installed, or a broken install
        return f"CuPy is not importable ({type(e).__name__}: {e}); install it with pip install -e '.[gpu-build]'"
    if hasattr(cupy, "_standin"):
        return "`import cupy` found the CuPy stand-in of tests/cupy_standin, not the real CuPy (PYTHONPATH)"
    try:
        from cupy.cuda import nvrtc
        nvrtc.getVersion()
    except Exception as e:
        return f"NVRTC is not usable ({type(e).__name__}: {e}); pip install -e '.[gpu-build]' brings it"
    try:
        from cuda.pathfinder import find_nvidia_header_directory
        headers = find_nvidia_header_directory("cudart")
    except Exception:
        headers = None
    if headers is None and not os.environ.get("CUDA_PATH"):
        return "no CUDA headers (cuda_runtime.h) were found: pip install -e '.[gpu-build]' or set CUDA_PATH"
    return None


# ----- arrays that point at no memory, so that CuPy can trace and plan without a device -----
_BASE = 0x10000000


def _no_memory(size):
    from cupy.cuda import memory
    return memory.MemoryPointer(memory.UnownedMemory(_BASE, max(int(size), 1), None, device_id=0), 0)


def _array_spec(spec):
    """(dtype, shape, strides, bytes spanned) of a signature's ["array", dtype, shape, strides]."""
    dtype, shape, strides = numpy.dtype(spec[1]), tuple(spec[2]), tuple(spec[3])
    return dtype, shape, strides, sum((n - 1) * abs(s) for n, s in zip(shape, strides) if n) + dtype.itemsize


def _argument(cupy, spec):
    kind = spec[0]
    if kind == "array":
        dtype, shape, strides, span = _array_spec(spec)
        return cupy.ndarray(shape, dtype, memptr=_no_memory(span), strides=strides)
    if kind == "numpy":
        return numpy.dtype(spec[1]).type(1)
    if kind == "python":
        return {"float": 1.0, "int": 1, "bool": True, "complex": 1j}[spec[1]]
    return None


def _patch_cupy():
    """Let CuPy plan and "launch" without a device: per-device memoised helpers unwrapped, and each compilation
    captured and answered by a module whose functions launch nothing, so that CuPy goes on to what it compiles next
    (CUB's second pass, after the first pass's launch)."""
    import cupy
    import cupy.cuda.compiler as compiler
    from cupy._core import _cub_reduction, _kernel, _reduction
    from cupy.cuda import function

    class NoFunction(function.Function):   # (Python overrides of cpdef methods are what CuPy's calls reach)
        def __init__(self):
            pass

        def linear_launch(self, *args, **kwargs):
            pass

        def __call__(self, *args, **kwargs):
            pass

    class NoModule(function.Module):
        def get_function(self, name):
            return NoFunction()

    def capture(source, options=(), *args, **kwargs):
        _CAPTURED.append((source, tuple(options)))
        return NoModule()

    cupy.cuda.set_allocator(_no_memory)
    compiler._compile_module_with_cache = capture
    for module in (_kernel, _reduction, _cub_reduction):
        for name, f in list(vars(module).items()):
            if callable(f) and hasattr(f, "__wrapped__"):   # cupy._util.memoize(for_each_device=...) wrappers
                setattr(module, name, f.__wrapped__)


def _merged_ndim(shape, arrays):
    """The number of dimensions CuPy's `_reduce_dims` leaves (cupy/_core/_kernel.pyx, _reduced_view_core)."""
    if len(shape) <= 1 or not arrays:
        return len(shape)
    strided = [a for a in arrays if not a._c_contiguous]
    if strided and len(shape) == 2:
        return 2
    if not strided:
        return 1
    sizes, axes, last = list(shape), [], -1
    for ax in range(len(shape)):
        if sizes[ax] == 1:
            continue
        if last < 0:
            last = ax
            continue
        if any(a.strides[ax] * sizes[ax] != a.strides[last] for a in strided):
            axes.append(last)
        else:
            sizes[ax] *= sizes[last]
        last = ax
    if last >= 0:
        axes.append(last)
    return len(shape) if len(axes) == len(shape) else len(axes)


def _broadcast(cupy, args):
    """The kernel's shape, and its inputs as CuPy's `_broadcast` and `_preprocess_args` make them: arrays broadcast
    to that shape, scalars as CScalars."""
    from cupy._core import _scalar
    shape = numpy.broadcast_shapes(*(a.shape for a in args if isinstance(a, cupy.ndarray)))
    return shape, [cupy.broadcast_to(a, shape) if isinstance(a, cupy.ndarray) else _scalar.CScalar(a) for a in args]


def _elementwise_source(cupy, kernel, args):
    """ElementwiseKernel.__call__ after cudaGetDevice, in Python, up to `_get_elementwise_kernel` (captured)."""
    from cupy._core import _carray, _kernel, _scalar
    shape, ins = _broadcast(cupy, args)
    in_types, out_types, type_map = kernel._decide_params_type(
        tuple(a.dtype if isinstance(a, cupy.ndarray) else None for a in ins), ())
    if 0 in shape:
        return None   # CuPy launches nothing for an empty array
    outs = [cupy.ndarray(shape, t) for t in out_types]
    arrays = [a for a in ins + outs if isinstance(a, cupy.ndarray)]
    ndim = _merged_ndim(shape, arrays) if kernel.reduce_dims else len(shape)
    infos = [_kernel._ArgInfo(_ARG_NDARRAY, type(a), a.dtype, ndim, a._c_contiguous, a._index_32_bits)
             if isinstance(a, cupy.ndarray) else
             _kernel._ArgInfo(_ARG_SCALAR, _scalar.CScalar, numpy.dtype(t), 0, True, True)
             for a, t in zip(ins + outs, in_types + out_types)]
    infos.append(_kernel._ArgInfo(_ARG_INDEXER, _carray.Indexer, None, ndim, True,
                                  int(numpy.prod(shape)) <= (1 << 31)))
    kernel._get_elementwise_kernel(0, tuple(infos), type_map)


def _reduction_source(cupy, kernel, kwargs, args):
    """ReductionKernel.__call__ after cudaGetDevice: `_call` plans the launch (axis, block size, CUB) as on a GPU."""
    shape, ins = _broadcast(cupy, args)
    kernel._call(ins, [], shape, kwargs.get("axis"), None, False, kernel.reduce_dims, 0, None, True, True)


def trace(body, signature):
    """The CUDA modules (source, CuPy's options) that one kernel at one signature compiles, in order: one, or two for
    a reduction over the whole array on CuPy's CUB path (its passes, -DFIRST_PASS=1 and -DSECOND_PASS=1); [] when
    nothing is launched (an empty array). Raises FirstFusionRefused where CuPy's first fusion refuses the body."""
    import cupy
    from cupy._core import _reduction
    from minitorch.backend import cuda_body
    args = [_argument(cupy, spec) for spec in signature]
    fused, stopped = cupy.fuse(cuda_body(body, cupy)), None
    try:
        fused(*args)
    except Exception as e:   # the launch stops at cudaGetDevice, after the kernel was made
        stopped = e
    if fused.new_fusion is not None or not fused._memo:
        raise FirstFusionRefused(f"{type(stopped).__name__}: {stopped}")
    (kernel, kwargs), = fused._memo.values()
    given = [a for a in args if a is not None]
    del _CAPTURED[:]
    if isinstance(kernel, _reduction.ReductionKernel):
        _reduction_source(cupy, kernel, kwargs, given)
    else:
        _elementwise_source(cupy, kernel, given)
    return list(_CAPTURED)


class FirstFusionRefused(RuntimeError):
    """CuPy's first fusion could not trace the body: CuPy (cupy/_core/fusion.pyx, Fusion.__call__) then sets the
    cupy.fuse object's new_fusion, so that this call and every later one, at every signature, runs the experimental
    second fusion instead."""

    def __str__(self):
        return ("CuPy's first fusion refuses the body at this signature, so from this call on the whole cupy.fuse "
                "object runs CuPy's experimental second fusion at every signature (cupy/_core/fusion.pyx sets its "
                f"new_fusion): {self.args[0]}")


PREMAP = re.compile(r"__device__ \S+ _pre_map\(([^)]*)\) \{(.*?)\n\s*return ", re.S)


def premap_writes(source):
    """The parameters that a reduction's pre-map assigns: CuPy passes them by value, so the writes are lost."""
    found = PREMAP.search(source)
    if not found:
        return []
    params = [p.split()[-1] for p in found.group(1).split(",") if p.strip()]
    return [p for p in params if re.search(rf"^\s*{p}\s*([-+*/%&|^]|<<|>>)?=[^=]", found.group(2), re.M)]


def compile_source(item):
    """NVRTC on one source for one architecture, with CuPy's options: None, or the compiler's log."""
    source, options, arch, name = item
    from cupy.cuda import compiler
    try:
        compiler._NVRTCProgram(source, f"{name}.cu", method="cubin").compile(
            options + NVRTC_OPTIONS + (f"-arch=sm_{arch}",))
    except compiler.CompileException as e:
        return e.get_message()
    return None


def load_kernels(modules=()):
    """Every fuse kernel of the project (and of any extra modules named), by name."""
    sys.path.insert(0, ROOT)
    import pkgutil
    importlib.import_module("minitorch")
    for package in KERNEL_MODULES:
        mod = importlib.import_module(package)
        for info in pkgutil.walk_packages(mod.__path__, package + "."):
            importlib.import_module(info.name)
    for extra in modules:
        importlib.import_module(extra)
    from minitorch import backend
    return backend.FUSED


def build(signatures, archs, jobs, sources_dir=None, modules=(), partial=False):
    """Trace, lint and compile every signature; print failures and a summary; return the number of failures."""
    start = time.perf_counter()
    _patch_cupy()
    kernels = load_kernels(modules)
    failures, distinct, calls = [], {}, 0
    for name in sorted(signatures):
        if name not in kernels:
            failures.append(f"{name}: recorded, but no such fuse kernel is defined")
            continue
        for signature in signatures[name]:
            calls += 1
            try:
                traced = trace(kernels[name].body, [tuple(s) for s in signature])
            except Exception as e:
                failures.append(f"{name} {_short(signature)}: {e}")
                continue
            for source, options in traced:
                for param in premap_writes(source):
                    failures.append(f"{name} {_short(signature)}: the pre-map assigns its parameter {param}, which "
                                    "CuPy passes by value: the write never reaches memory (write the array in a "
                                    "kernel without a reduction)")
                distinct.setdefault((source, options), name)
    unused = sorted(set(kernels) - set(signatures)) if not partial else []
    failures += [f"{name}: never called by the recorded run, so not built" for name in unused]
    traced_at = time.perf_counter()
    work = [(src, opts, arch, name.rsplit(".", 1)[-1]) for (src, opts), name in distinct.items() for arch in archs]
    with concurrent.futures.ProcessPoolExecutor(max_workers=jobs) as pool:
        logs = list(pool.map(compile_source, work, chunksize=4))
    for (src, _, arch, name), log in zip(work, logs):
        if log is not None:
            first = next((line for line in log.splitlines() if "error" in line), log.strip()[:300])
            failures.append(f"{distinct[(src, _)]} (sm_{arch}): NVRTC: {first}")
    if sources_dir:
        write_sources(sources_dir, distinct)
    for line in failures:
        print("FAIL", line)
    passes = collections.Counter(cub_pass(options) for _, options in distinct)
    built = len({name for name in signatures if name in kernels})
    print(f"{len(kernels)} kernels ({built} called), {calls} signatures, {len(distinct)} distinct CUDA sources "
          f"({passes[None]} one-pass, {passes[1]} CUB first passes, {passes[2]} CUB second passes), compiled for "
          f"{', '.join('sm_' + a for a in archs)}: {len(failures)} failures (traced in "
          f"{traced_at - start:.1f} s, compiled in {time.perf_counter() - traced_at:.1f} s with {jobs} processes)")
    return len(failures)


def cub_pass(options):
    """1 or 2 for a module of CuPy's two-pass CUB reduction (cupy/_core/_cub_reduction.pyx), else None."""
    return 1 if "-DFIRST_PASS=1" in options else 2 if "-DSECOND_PASS=1" in options else None


def _short(signature):
    return "(" + ", ".join(s[1] + str(list(s[2])) if s[0] == "array" else s[-1] for s in signature) + ")"


def write_sources(folder, sources):
    """Each module {(source, options): kernel} as SHA256.cu, and index.txt: its hash and kernel a line (what
    gpu_check.sh compares). The hash is of the source and the options that define macros (CUB's pass), not of the
    include paths, which differ from machine to machine."""
    os.makedirs(folder, exist_ok=True)
    lines = []
    for (src, options), name in sources.items():
        defines = " ".join(o for o in options if o.startswith("-D"))
        digest = hashlib.sha256((defines + "\n" + src).encode()).hexdigest()
        with open(os.path.join(folder, digest + ".cu"), "w") as f:
            f.write(src)
        lines.append(f"{digest} {name}")
    with open(os.path.join(folder, "index.txt"), "w") as f:
        f.write("\n".join(sorted(lines)) + "\n")


def device_sources(signatures, folder):
    """On a real GPU: run each signature on device arrays and keep every source CuPy compiled (compare with build)."""
    import cupy
    import cupy.cuda.compiler as compiler
    from minitorch.backend import cuda_body
    kernels, seen, compile_module = load_kernels(), {}, compiler._compile_module_with_cache
    for name, calls in sorted(signatures.items()):
        def keep(source, options=(), **kw):
            seen[(source, tuple(options))] = name
            return compile_module(source, options, **kw)
        compiler._compile_module_with_cache = keep
        fused = cupy.fuse(cuda_body(kernels[name].body, cupy))
        for signature in calls:
            fused(*[_device_argument(cupy, spec) for spec in signature])
    cupy.cuda.Device().synchronize()
    write_sources(folder, seen)
    print(f"{len(seen)} distinct CUDA sources compiled on {cupy.cuda.runtime.getDeviceProperties(0)['name'].decode()}")


def _device_argument(cupy, spec):
    """A signature's argument on the GPU: an array of its dtype, shape and strides (zeros), or the scalar."""
    if spec[0] != "array":
        return _argument(cupy, spec)
    dtype, shape, strides, span = _array_spec(spec)
    return cupy.lib.stride_tricks.as_strided(cupy.zeros(span // dtype.itemsize + 1, dtype), shape, strides)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="trace, lint and compile every recorded signature (no GPU needed)")
    b.add_argument("signatures", help="JSON: kernel name -> list of argument signatures")
    b.add_argument("--arch", action="append", help="compute capability, e.g. 90 (default: 90 and the oldest that "
                                                   "NVRTC supports, 75 for CUDA 13)")
    b.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="compiler processes")
    b.add_argument("--sources", help="folder to write each distinct source to (SHA256.cu and index.txt)")
    b.add_argument("--module", action="append", default=[], help="a further module whose fuse kernels to build")
    b.add_argument("--partial", action="store_true", help="build what is recorded, without requiring every kernel")
    sub.add_parser("check", help="whether CuPy, NVRTC and the CUDA headers are usable here (exit 2 and why if not)")
    d = sub.add_parser("device", help="on a real GPU: the sources CuPy compiles for each recorded signature")
    d.add_argument("signatures")
    d.add_argument("--sources", required=True)
    args = parser.parse_args(argv)
    problem = missing()
    if problem:
        print(f"cuda_sources: {problem}")
        return 2
    if args.command == "check":
        print("cuda_sources: CuPy, NVRTC and the CUDA headers are usable")
        return 0
    try:
        with open(args.signatures) as f:
            signatures = json.load(f)
    except (OSError, ValueError) as e:
        print(f"cuda_sources: cannot read {args.signatures}: {e}")
        return 2
    if args.command == "device":
        device_sources(signatures, args.sources)
        return 0
    return 1 if build(signatures, args.arch or default_archs(), max(1, args.jobs), args.sources,
                      args.module, args.partial) else 0


if __name__ == "__main__":
    sys.exit(main())
