"""Benchmark the fused ops against the same ops composed from primitives: `python -m minitorch.tools.bench_ops`.

For each op at Transformer sizes it prints the median forward+backward time and the bytes the graph saves for the
backward (minitorch.tools.graph_memory.saved_bytes), fused and composed measured alternately in one run. Figures only:
nothing here is asserted by the tests.
"""
import argparse
import statistics
import time

import numpy as np

from .. import backend, fused
from ..core import no_grad
from ..fused import composed
from ..functions import cat
from ..tensor import Tensor
from .graph_memory import saved_bytes

OPS = ("softmax", "log_softmax", "cross_entropy", "layer_norm", "scaled_dot_product_attention", "lstm_cell")
FUSED = {name: getattr(fused, name) for name in OPS}
COMPOSED = {name: getattr(composed, name) for name in OPS}


def cases(batch, heads, length, d_model, vocab, dtype, device):
    """(name, shape text, make inputs, call(ops, inputs)) for each op; ops is FUSED or COMPOSED; inputs drawn once."""
    rng = np.random.default_rng(0)
    d_head = d_model // heads

    def leaf(*shape, scale=1.0):
        data = backend.to_device((rng.standard_normal(shape) * scale).astype(dtype), device)
        return lambda: Tensor._make(data, requires_grad=True)  # a fresh leaf (own .grad) on the same data

    scores = leaf(batch, heads, length, length)
    logits = leaf(batch, length, vocab, scale=3.0)
    target = rng.integers(0, vocab, size=(batch, length))
    lengths = rng.integers(length // 2, length + 1, size=batch)       # padded batch: about 1/4 of the ids ignored
    pad = np.arange(length)[None, :] >= lengths[:, None]
    target[pad] = -100
    pad_mask = backend.to_device(~pad[:, None, None, :], device)      # (B, 1, 1, T), True = a real token
    x = leaf(batch, length, d_model)
    w, b = leaf(d_model), leaf(d_model)
    q, k, v = (leaf(batch, heads, length, d_head) for _ in range(3))
    gates, c_prev = leaf(batch, 4 * d_model), leaf(batch, d_model)   # one time step of an LSTM with H = d_model
    return [
        ("softmax", f"({batch}, {heads}, {length}, {length}) dim=-1",
         lambda: [scores()], lambda ops, t: ops["softmax"](t[0], dim=-1)),
        ("log_softmax", f"({batch}, {length}, {vocab}) dim=-1",
         lambda: [logits()], lambda ops, t: ops["log_softmax"](t[0], dim=-1)),
        ("cross_entropy", f"({batch}, {length}, {vocab}) smoothing 0.1, padding ignored",
         lambda: [logits()], lambda ops, t: ops["cross_entropy"](t[0], target, label_smoothing=0.1)),
        ("layer_norm", f"({batch}, {length}, {d_model}) affine",
         lambda: [x(), w(), b()], lambda ops, t: ops["layer_norm"](t[0], d_model, t[1], t[2])),
        ("attention", f"({batch}, {heads}, {length}, {d_head}) padding mask, dropout 0.1",
         lambda: [q(), k(), v()],
         lambda ops, t: ops["scaled_dot_product_attention"](t[0], t[1], t[2], pad_mask, dropout_p=0.1, training=True)),
        ("lstm_cell", f"gates ({batch}, {4 * d_model}), c_prev ({batch}, {d_model}): one step, [h, c] joined",
         lambda: [gates(), c_prev()], lambda ops, t: cat(list(ops["lstm_cell"](t[0], t[1])), dim=-1)),
    ]


def run_once(call, impl, inputs, grad):
    """One forward+backward: (seconds, bytes saved for backward)."""
    sync = backend.xp_of_device("cuda").cuda.Device().synchronize if backend.device_of(grad) == "cuda" else None
    start = time.perf_counter()
    out = call(impl, inputs)
    if sync:
        sync()
    forward = time.perf_counter() - start
    saved = saved_bytes(out)  # measured between the two timings: backward releases what was saved
    start = time.perf_counter()
    out.backward(None if out.ndim == 0 else Tensor._make(grad))
    if sync:
        sync()
    return forward + time.perf_counter() - start, saved


def bench(batch=32, heads=8, length=64, d_model=512, vocab=8000, dtype="float32", device="cpu", reps=7):
    """Print one row per op: fused vs composed forward+backward milliseconds and MB saved for backward."""
    impls = {"fused": FUSED, "composed": COMPOSED}
    print(f"minitorch fused ops vs composed from primitives: {dtype}, {device}, median of {reps} forward+backward "
          f"runs (alternating), MB = bytes saved for backward / 2**20")
    header = f"{'op':<14} {'fused ms':>9} {'composed ms':>12} {'speedup':>8} {'fused MB':>9} {'composed MB':>12} " \
             f"{'saved x':>8}  shape"
    print(header)
    print("-" * len(header))
    for name, shape_text, make, call in cases(batch, heads, length, d_model, vocab, dtype, device):
        with no_grad():
            probe = call(FUSED, make())
        grad = backend.to_device(np.random.default_rng(1).standard_normal(probe.shape).astype(dtype), device)
        times, saved = {"fused": [], "composed": []}, {}
        for _ in range(reps):
            for impl in ("fused", "composed"):
                backend.manual_seed(0)  # the same dropout mask for both
                seconds, saved[impl] = run_once(call, impls[impl], make(), grad)
                times[impl].append(seconds)
        f_ms, c_ms = (1e3 * statistics.median(times[i]) for i in ("fused", "composed"))
        f_mb, c_mb = (saved[i] / 2**20 for i in ("fused", "composed"))
        print(f"{name:<14} {f_ms:>9.2f} {c_ms:>12.2f} {c_ms / f_ms:>7.2f}x {f_mb:>9.2f} {c_mb:>12.2f} "
              f"{c_mb / f_mb if f_mb else float('nan'):>7.2f}x  {shape_text}")


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m minitorch.tools.bench_ops", description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--length", type=int, default=64)
    parser.add_argument("--d-model", type=int, default=512)
    parser.add_argument("--vocab", type=int, default=8000)
    parser.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--reps", type=int, default=7)
    args = parser.parse_args(argv)
    if args.d_model % args.heads:
        parser.error(f"--d-model {args.d_model} must be divisible by --heads {args.heads}")
    if args.length < 2:
        parser.error("--length must be at least 2")
    try:
        backend.check_device(args.device)
    except RuntimeError as e:
        parser.error(str(e))
    bench(args.batch, args.heads, args.length, args.d_model, args.vocab, args.dtype, args.device, args.reps)


if __name__ == "__main__":
    main()
