"""The signatures of every `cupy.fuse` call made on the CuPy stand-in, as JSON, for scripts/cuda_sources.py:

    python3 tests/record_fused_calls.py OUT.json                          the engine's device tests
    python3 tests/record_fused_calls.py --training [--precision P] OUT.json   what GPU training runs call

--training runs, on the stand-in, what a GPU user runs (RUNS): `fit` of every model kind on the demo corpus with
its validation (loss and greedy BLEU), `evaluate` of each with beam search and greedily, one step of the `small`
preset at the bench's batch (its 4000-word vocabulary, which takes CuPy's CUB path for the rows of the logits), beam
and greedy decoding of that model, and the data-parallel step of `fit --distributed` (GradientSync over the flat
buffers) in one process, by a world of two ranks whose sums are its own. `--precision` picks a row of PRECISIONS:
the flags that make those runs train in that precision (fp32, float32, the default, adds none; fp16: mixed
precision with loss scaling, `--precision fp16`).

CI's tests/test_cuda_sources.py and scripts/gpu_check.sh run both. This file is also the pytest plugin that writes
the engine tests' calls (`-p record_fused_calls`, with tests/ on PYTHONPATH): at the end of the run, into the file
$MINITORCH_FUSED_CALLS."""
import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent

# precision -> the flags of `fit` and `bench` that train in it (a precision added to the CLI adds its row here)
PRECISIONS = {"fp32": [], "fp16": ["--precision", "fp16"]}   # (the CLI's names)
RUNS = ("fit of transformer, lstm and lstm-attn on the demo corpus with validation; evaluate with beam 5 and greedy; "
        "a small step at the bench's batch; its beam and greedy decoding; the data-parallel step")


def fused_calls():
    """{kernel name: [signature, ...]} of this process's stand-in (empty when the stand-in is not in use)."""
    import cupy
    calls = getattr(getattr(cupy, "_standin", None), "FUSED_CALLS", {})
    return {name: sorted(signatures) for name, signatures in calls.items()}


def pytest_sessionfinish(session, exitstatus):
    path = os.environ.get("MINITORCH_FUSED_CALLS")
    if path:
        with open(path, "w") as f:
            json.dump(fused_calls(), f)


def standin_env(**extra):
    """The environment of a child process that imports the stand-in as cupy."""
    paths = [str(TESTS), str(TESTS / "cupy_standin"), str(ROOT), os.environ.get("PYTHONPATH", "")]
    return dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in paths if p), **extra)


def record(path):
    """Run `pytest tests/engine -k cuda` on the stand-in, writing its fused calls to path; the finished run."""
    env = standin_env(MINITORCH_FUSED_CALLS=str(path))
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "record_fused_calls", "-p", "no:cacheprovider",
                           "tests/engine", "-k", "cuda"], capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=900)


def record_training(path, precision="fp32"):
    """Run RUNS in `precision` on the stand-in in a child process, writing their fused calls to path; the run."""
    env = standin_env()
    env.pop("MINITORCH_FUSED_CALLS", None)
    return subprocess.run([sys.executable, str(Path(__file__)), "--training", "--precision", precision, str(path)],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=900)


class LoopbackWorld:
    """Rank 0 of a world of two whose collectives leave the arrays as they are: the data-parallel step's code (its
    GradientSync, the loss and stop flag riding along) runs in one process, as each rank of a real job runs it."""

    rank, size, is_main = 0, 2, True

    def allreduce_sum_(self, array):
        return array

    def broadcast_(self, array, root=0):
        return array

    def broadcast_object(self, obj, root=0):
        return obj

    def allgather_object(self, obj):
        return [obj, obj]

    def any(self, flag):
        return bool(flag)

    def barrier(self):
        pass


def cli(*argv):
    """`python -m train ARGV` in this process, its output kept; raises with that output unless it exits with 0."""
    from train.__main__ import main
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            status = main([str(a) for a in argv])
        except SystemExit as e:
            status = e.code
    if status != 0:
        raise RuntimeError(f"python -m train {' '.join(map(str, argv))} exited with {status}:\n"
                           f"{out.getvalue()[-3000:]}")


def training_runs(folder, precision):
    """RUNS on the device "cuda" (here the stand-in), in this process; run folders under folder."""
    from train.commands.bench import BenchStep, build_model, synthetic_batch, train_mode
    from train.data.batching import training_batch
    from train.run.presets import PRESETS
    from transformer.registry import MODELS
    flags = PRECISIONS[precision]
    for kind in MODELS:
        run = Path(folder) / kind
        cli("fit", "--preset", "demo", "--model", kind, "--device", "cuda", "--run-dir", run, "--max-steps", 2, *flags)
        for beam in (5, 1):
            cli("evaluate", "--run-dir", run, "--device", "cuda", "--beam", beam)
    train_mode.PEAK_N, train_mode.PEAK_REPS = 64, 1   # the bench's matmul peak is not wanted here
    cli("bench", "--preset", "small", "--device", "cuda", "--steps", 1, "--warmup-steps", 0, *flags)
    cli("bench", "--preset", "small", "--device", "cuda", "--mode", "decode", "--batch-size", 2, "--seq-len", 8)
    demo = PRESETS["demo"]
    batch = training_batch(*synthetic_batch(8, 12, demo.vocab_size, 0))
    step = BenchStep(demo, build_model(demo, "cuda", 0), batch, "cuda", world=LoopbackWorld(),
                     batch_tokens=int(batch[1].size), precision=precision)
    step()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("out", help="the JSON file to write")
    parser.add_argument("--training", action="store_true", help="record RUNS instead of the engine's device tests")
    parser.add_argument("--precision", choices=sorted(PRECISIONS), default="fp32", help="--training's precision")
    args = parser.parse_args(argv)
    if not args.training:
        done = record(args.out)
        print(done.stdout[-3000:] if done.returncode else done.stdout.strip().splitlines()[-1])
        return done.returncode
    import cupy
    if not hasattr(cupy, "_standin"):
        print("record_fused_calls: --training records on the CuPy stand-in (tests/cupy_standin on PYTHONPATH)")
        return 2
    with tempfile.TemporaryDirectory() as folder:
        training_runs(folder, args.precision)
    with open(args.out, "w") as f:
        json.dump(fused_calls(), f)
    print(f"recorded {sum(map(len, fused_calls().values()))} signatures of {len(fused_calls())} kernels: {RUNS}, "
          f"in {args.precision}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
