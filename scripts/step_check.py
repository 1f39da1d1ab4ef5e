"""One whole training step on the CPU and on the GPU, from the same weights and batch with dropout off: the loss and
every parameter's gradient compared, for scripts/gpu_check.sh.

    python3 scripts/step_check.py [--models transformer,lstm-attn] [--preset small] [--batch-size 32]

The step is fit's (train/loop/step.py: forward, label-smoothed loss over the batch's target tokens, backward) on a
synthetic batch (the bench's), with the preset's sizes and dropout 0. The CPU runs it in float32; the GPU in float32,
then with TF32 products (`mt.backends.cuda.matmul.allow_tf32`) and in float16 under `mt.autocast` where this version
of the engine has them (otherwise the line says "not available"). Errors are relative: |loss - loss_cpu| / |loss_cpu|,
and over all gradients ||g - g_cpu|| / ||g_cpu|| (the worst single parameter is printed beside it). TOLERANCES gives
the bound of each precision. In float32 the two devices differ in the order of their sums and in their kernels (the
GPU's fused LayerNorm and softmax, the CPU's own): the loss agrees to about 1e-7, and the gradient of a LayerNorm's
weight, a sum over every token of products that cancel, to a few 1e-4 (the stand-in's float32 step, whose kernels are
the GPU's bodies on NumPy, gives up to 1.7e-4 over all gradients and 8e-4 at worst for the `small` Transformer).
TF32 rounds the products' inputs to 10 bits of mantissa, as float16 does with the products' inputs and the
activations: on the stand-in (which rounds as cuBLAS does) each gives about 1e-2 over all gradients at the demo and
small sizes, and a few 1e-7 to 1e-5 on the loss. Exit status 1 when a bound is exceeded.
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import minitorch as mt   # noqa: E402
from train.commands.bench import synthetic_batch   # noqa: E402
from train.data.batching import training_batch   # noqa: E402
from train.loop.assemble import make_update   # noqa: E402
from train.run.presets import PRESETS   # noqa: E402
from transformer import registry   # noqa: E402

TOLERANCES = {"float32": (1e-5, 1e-3), "tf32": (1e-3, 5e-2), "fp16": (1e-3, 5e-2)}   # (loss, gradients), relative


def tf32_switch():
    """The engine's TF32 switch (mt.backends.cuda.matmul), or None in a version without it."""
    matmul = getattr(getattr(mt.backends, "cuda", None), "matmul", None)
    return matmul if matmul is not None and hasattr(matmul, "allow_tf32") else None


def one_step(kind, preset, batch, device, precision="float32", seed=0):
    """(loss, {name: gradient}) as NumPy, of one training step from the weights of `seed` with dropout off."""
    mt.manual_seed(seed)
    sizes = dict(preset.sizes(kind), dropout=0.0)
    model = registry.new_model(kind, preset.vocab_size, sizes).to(device).train()
    update = make_update(model, preset, sizes.get("d_model", 1), device)
    switch = tf32_switch()
    if switch is not None:
        switch.allow_tf32 = precision == "tf32"
    try:
        if precision == "fp16":
            with mt.autocast(device, dtype=np.float16):
                loss = update.step_fn.forward(batch)
        else:
            loss = update.step_fn.forward(batch)
        loss.backward()
    finally:
        if switch is not None:
            switch.allow_tf32 = False
    update.flat.settle()   # gradients made from a float16 copy of the buffer reach the float32 ones here
    return float(loss.numpy()), {name: p.grad.numpy().astype(np.float64) for name, p in model.named_parameters()}


def compare(reference, other):
    """(relative loss error, relative gradient error over all, (worst parameter, its relative error))."""
    (loss_a, grads_a), (loss_b, grads_b) = reference, other
    diff = sum(float(np.sum((grads_b[n] - g) ** 2)) for n, g in grads_a.items())
    norm = sum(float(np.sum(g ** 2)) for g in grads_a.values())
    worst = max(((n, float(np.linalg.norm(grads_b[n] - g) / max(np.linalg.norm(g), 1e-30))) for n, g in
                 grads_a.items()), key=lambda t: t[1])
    return abs(loss_b - loss_a) / abs(loss_a), (diff / norm) ** 0.5, worst


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("--models", default="transformer,lstm-attn", help="comma-separated model kinds")
    parser.add_argument("--preset", default="small", choices=sorted(PRESETS))
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--seq-len", type=int, default=24)
    args = parser.parse_args(argv)
    if not mt.cuda_available():
        print("step_check: no GPU (nor the CuPy stand-in): nothing to compare")
        return 2
    preset = PRESETS[args.preset]
    batch = training_batch(*synthetic_batch(args.batch_size, args.seq_len, preset.vocab_size, 0))
    precisions = ["float32", "tf32" if tf32_switch() else None, "fp16" if hasattr(mt, "autocast") else None]
    failed = False
    for kind in args.models.split(","):
        start = time.perf_counter()
        cpu = one_step(kind, preset, batch, "cpu")
        print(f"{kind} ({args.preset} sizes, batch {args.batch_size} x {args.seq_len}, dropout 0): CPU float32 loss "
              f"{cpu[0]:.6f}")
        for name, precision in zip(("float32", "tf32", "fp16"), precisions):
            if precision is None:
                print(f"  GPU {name:<8} not available (this version of the engine has no "
                      f"{'mt.backends.cuda.matmul.allow_tf32' if name == 'tf32' else 'mt.autocast'})")
                continue
            loss_err, grad_err, (worst, worst_err) = compare(cpu, one_step(kind, preset, batch, "cuda", precision))
            bound_loss, bound_grad = TOLERANCES[precision]
            ok = loss_err <= bound_loss and grad_err <= bound_grad
            failed |= not ok
            print(f"  GPU {name:<8} loss error {loss_err:.2e} (at most {bound_loss:.0e}), gradients {grad_err:.2e} "
                  f"(at most {bound_grad:.0e}; worst {worst} {worst_err:.2e}): {'ok' if ok else 'FAILED'}")
        print(f"  ({time.perf_counter() - start:.1f} s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
