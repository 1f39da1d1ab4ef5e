"""check-gpu: does the GPU path work on this machine, and how fast? (device, CuPy and CUDA versions, a few steps)

Prints the GPU's name, memory and compute capability, the CuPy, CUDA runtime and driver versions, checks one matrix
product against NumPy's, then times a few training steps of the preset's model on a synthetic batch (target
tokens/s) in the precision asked for (--precision fp16, --tf32), which it names. When something is missing it says
what, and how to install it, and exits 1.
"""
import numpy as np

from minitorch import backend

from . import bench
from ..cli.arguments import add_precision_arguments, apply_tf32, non_negative_int, positive_int
from ..cli.errors import TrainError
from ..run.presets import PRESETS

def add_arguments(p):
    p.add_argument("--preset", choices=sorted(PRESETS), default="small",
                   help="the model whose training steps are timed (default small)")
    p.add_argument("--steps", type=positive_int, default=5, help="timed training steps (default 5)")
    p.add_argument("--warmup-steps", type=non_negative_int, default=2, help="untimed steps first (default 2)")
    add_precision_arguments(p, default="fp32")


def main(args):
    try:
        info = backend.gpu_info()
    except RuntimeError as e:
        raise TrainError(str(e)) from None
    print(f"GPU: {info['name']}, {info['memory_bytes'] / 2**30:.1f} GiB, compute capability "
          f"{info['compute_capability']}")
    print(f"CuPy {info['cupy']}, CUDA runtime {info['cuda_runtime']}, driver supports CUDA {info['cuda_driver']}")
    check_matmul(info["cuda_runtime"].split(".")[0])
    print("matrix product on the GPU: matches NumPy")
    apply_tf32(args, "cuda")
    preset = PRESETS[args.preset]
    batch_size = max(preset.batch_tokens // bench.SEQ_LEN, 1)
    r = bench.bench_train(preset, "cuda", batch_size, bench.SEQ_LEN, args.steps, args.warmup_steps, 0, False,
                          progress=False, precision=args.precision)
    overflows = f", {r['overflow_steps']} skipped for overflow" if r["overflow_steps"] else ""
    print(f"training in {r['precision']}{overflows}, preset {preset.name} ({r['parameters']:,} parameters), "
          f"{batch_size} sentences x "
          f"{bench.SEQ_LEN} tokens: {r['step_s_median'] * 1e3:,.1f} ms a step (median of {args.steps}), "
          f"{r['tokens_per_s']:,.0f} target tokens/s, GPU memory pool peak "
          f"{(r['device_pool_peak_bytes'] or 0) / 2**20:,.0f} MB, loss {r['losses'][0]:.3f} -> {r['losses'][-1]:.3f}")
    print("the GPU path works: pass --device cuda to fit, evaluate, translate and bench")
    return 0


def check_matmul(cuda_major, n=256):
    """A float32 product and a random draw on the GPU against NumPy: CuPy loads NVRTC (its kernels are compiled on
    first use), cuBLAS and cuRAND then, so a missing CUDA library shows here, named."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, n, n), dtype=np.float32)
    try:
        got = backend.to_numpy(backend.to_device(a, "cuda") @ backend.to_device(b, "cuda") + 1.0)
        backend.rng("cuda").random(4)
    except Exception as e:   # CuPy's load, compile and runtime errors have no common base class
        raise TrainError(missing_library(e, cuda_major)) from None
    if not np.allclose(got, a @ b + 1.0, rtol=1e-3, atol=1e-3):
        raise TrainError("the GPU's matrix product differs from NumPy's: the CUDA set-up computes wrong results")


# (words of CuPy's error, the library, its PyPI package for CUDA 13 (CUDA 12's adds -cu12)), in the order checked
_LIBRARIES = [(("nvrtc",), "NVRTC, the compiler CuPy builds its kernels with", "nvidia-cuda-nvrtc"),
              (("cublas",), "cuBLAS, for matrix products", "nvidia-cublas"),
              (("curand",), "cuRAND, for random numbers (dropout)", "nvidia-curand"),
              ((".h\"", ".h'", "header"), "the CUDA headers that CuPy compiles with", "nvidia-cuda-runtime"),
              (("cudart",), "the CUDA runtime", "nvidia-cuda-runtime")]


def missing_library(error, cuda_major):
    """One line for an error CuPy raised on its first kernels: the CUDA library it could not load and what brings it."""
    text = f"{type(error).__name__}: {error}".splitlines()[0]
    extra = f"pip install -e '.[gpu-cuda{cuda_major}]' installs CuPy with every CUDA library it loads"
    for words, library, package in _LIBRARIES:
        if any(word in text.lower() for word in words):
            wheel = f"{package}-cu12" if cuda_major == "12" else f"{package}=={cuda_major}.*"
            return f"CuPy could not load {library} ({text}); {extra}, or pip install '{wheel}' adds this one"
    return f"CuPy is installed but could not run a kernel ({text}); {extra}"
