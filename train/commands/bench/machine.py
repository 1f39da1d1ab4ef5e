"""Facts about the machine a bench runs on: its float32 matmul peak, the FLOPs of a step, BLAS threads, memory."""
import math
import os
import resource
import sys
import time

import numpy as np

from minitorch import backend

PEAK_N, PEAK_REPS = 2048, 5   # the matmul that measures the machine's peak: (n, n) @ (n, n), best of reps


def matmul_peak_gflops(device, n=PEAK_N, reps=PEAK_REPS):
    """float32 GFLOP/s of the best of `reps` (n, n) @ (n, n) products: the machine's matrix-product peak."""
    xp = backend.xp_of_device(device)
    a, b = (backend.to_device(np.random.default_rng(i).standard_normal((n, n), dtype=np.float32), device)
            for i in (1, 2))
    out = a @ b   # warm-up: threads started, pages touched
    best = math.inf
    for _ in range(reps):
        backend.synchronize(device)
        start = time.perf_counter()
        xp.matmul(a, b, out=out)
        backend.synchronize(device)
        best = min(best, time.perf_counter() - start)
    return 2 * n ** 3 / best / 1e9


def step_matmul_flops(cfg, B, S, T):
    """FLOPs of the matrix products in one training step of a Transformer on a (B, S) -> (B, T) padded batch:
    forward F (2 per multiply-add: projections, FFN, q k^T, weights @ v, output logits) plus 2F for the backward
    (a product for each operand's gradient)."""
    d, f, V = cfg["d_model"], cfg["d_ff"], cfg["vocab_size"]
    encoder = 2 * B * S * (4 * d * d + 2 * d * f) + 2 * 2 * B * S * S * d          # qkv + out, FFN; attention
    decoder = (2 * B * T * (6 * d * d + 2 * d * f)    # self qkv + out, cross q + out, FFN
               + 2 * B * S * 2 * d * d                # cross-attention keys and values from the memory
               + 2 * 2 * B * T * T * d + 2 * 2 * B * T * S * d)                     # self- and cross-attention
    forward = cfg["n_encoder_layers"] * encoder + cfg["n_decoder_layers"] * decoder + 2 * B * T * d * V
    return 3 * forward


def blas_threads(blas=True):
    """{library: threads}, by name, of the BLAS libraries (what --threads sets), or with blas=False of the other
    thread pools in the process (e.g. sentencepiece's OpenMP), from threadpoolctl when it is installed, else the
    thread environment variables."""
    try:
        from threadpoolctl import threadpool_info
        return dict(sorted((i["internal_api"], i["num_threads"]) for i in threadpool_info()
                           if (i["user_api"] == "blas") == blas))
    except ImportError:
        names = ("MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS") if blas else ("OMP_NUM_THREADS",)
        return {name: os.environ.get(name, "unset") for name in names}


class HostMemory:
    """Resident memory of this process (Linux /proc; peak_rss also elsewhere through getrusage)."""

    @staticmethod
    def peak_rss():
        """Bytes: the process's peak resident set since it started."""
        kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return kib if sys.platform == "darwin" else kib * 1024   # macOS reports bytes, Linux KiB

    @staticmethod
    def _status(field):
        try:
            with open("/proc/self/status") as f:
                for line in f:
                    if line.startswith(field + ":"):
                        return int(line.split()[1]) * 1024
        except OSError:
            pass
        return None

    def rss(self):
        return self._status("VmRSS")

    def reset_peak(self):
        """Restart the kernel's peak-RSS mark (VmHWM); False where that is not possible."""
        try:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
            return True
        except OSError:
            return False

    def peak_since_reset(self):
        return self._status("VmHWM")
