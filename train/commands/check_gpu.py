"""check-gpu: does the GPU path work on this machine, and how fast? (device, CuPy and CUDA versions, a few steps)

Prints the GPU's name, memory and compute capability, the CuPy, CUDA runtime and driver versions, checks one matrix
product against NumPy's, then times a few training steps of the preset's model on a synthetic batch (target
tokens/s). When something is missing it says what, and how to install it, and exits 1.
"""
import numpy as np

from minitorch import backend

from . import bench
from ..cli.arguments import non_negative_int, positive_int
from ..cli.errors import TrainError
from ..run.presets import PRESETS

def add_arguments(p):
    p.add_argument("--preset", choices=sorted(PRESETS), default="small",
                   help="the model whose training steps are timed (default small)")
    p.add_argument("--steps", type=positive_int, default=5, help="timed training steps (default 5)")
    p.add_argument("--warmup-steps", type=non_negative_int, default=2, help="untimed steps first (default 2)")


def main(args):
    try:
        info = backend.gpu_info()
    except RuntimeError as e:
        raise TrainError(str(e)) from None
    print(f"GPU: {info['name']}, {info['memory_bytes'] / 2**30:.1f} GiB, compute capability "
          f"{info['compute_capability']}")
    print(f"CuPy {info['cupy']}, CUDA runtime {info['cuda_runtime']}, driver supports CUDA {info['cuda_driver']}")
    check_matmul()
    print("matrix product on the GPU: matches NumPy")
    preset = PRESETS[args.preset]
    batch_size = max(preset.batch_tokens // bench.SEQ_LEN, 1)
    r = bench.bench_train(preset, "cuda", batch_size, bench.SEQ_LEN, args.steps, args.warmup_steps, 0, False,
                          progress=False)
    print(f"training, preset {preset.name} ({r['parameters']:,} parameters), {batch_size} sentences x "
          f"{bench.SEQ_LEN} tokens: {r['step_s_median'] * 1e3:,.1f} ms a step (median of {args.steps}), "
          f"{r['tokens_per_s']:,.0f} target tokens/s, GPU memory pool peak "
          f"{(r['device_pool_peak_bytes'] or 0) / 2**20:,.0f} MB, loss {r['losses'][0]:.3f} -> {r['losses'][-1]:.3f}")
    print("the GPU path works: pass --device cuda to fit, evaluate, translate and bench")
    return 0


def check_matmul(n=256):
    """A float32 product on the GPU against NumPy's: CuPy compiles its kernels on first use, so a broken CUDA set-up
    (e.g. missing CUDA headers, NVRTC errors) shows here."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, n, n), dtype=np.float32)
    try:
        got = backend.to_numpy(backend.to_device(a, "cuda") @ backend.to_device(b, "cuda") + 1.0)
    except Exception as e:   # CuPy's compile and runtime errors have no common base class
        raise TrainError(f"CuPy is installed but could not run a kernel ({type(e).__name__}: {e}); on CUDA 12.2 or "
                         f"later with a PyPI wheel, pip install 'nvidia-cuda-runtime-cu12==12.X.*' (your CUDA 12.X) "
                         f"gives CuPy the headers it compiles with") from None
    if not np.allclose(got, a @ b + 1.0, rtol=1e-3, atol=1e-3):
        raise TrainError("the GPU's matrix product differs from NumPy's: the CUDA set-up computes wrong results")
