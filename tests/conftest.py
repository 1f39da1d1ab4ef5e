"""Shared fixtures and hypothesis strategies for the engine tests.

It imports the engine only (numpy, pytest and hypothesis are all the engine's tests need); the fixtures of the
pipeline's tests import `train` when they run.

Test modules import the strategies with `from conftest import ...` (pytest puts this folder on sys.path).

device="cuda": with CuPy and a GPU present the tests use them; everywhere else (CI has no GPU) they run on the strict
CuPy stand-in in tests/cupy_standin, which is put first on sys.path (and on PYTHONPATH, for the tests' subprocesses)
before minitorch is imported, so `import cupy` finds it.
"""
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

STANDIN_DIR = Path(__file__).resolve().parent / "cupy_standin"


def _real_gpu_usable():
    """True when a real CuPy (not this stand-in, found through PYTHONPATH) is installed and sees a GPU; asked in a
    subprocess, so that a failed CuPy import stays there."""
    import importlib.util
    if importlib.util.find_spec("cupy") is None:
        return False
    probe = "import cupy; print(0 if hasattr(cupy, '_standin') else cupy.cuda.runtime.getDeviceCount())"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    return done.returncode == 0 and done.stdout.strip() not in ("", "0")


# The commands measure their BLAS thread count at start; runs that a test compares number for number (a resumed run
# against an uninterrupted one) must not differ in it, so the tests take one thread (test_threads.py, which checks the
# measurement, removes the variable). Set before NumPy loads OpenBLAS, which reads it then.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

CUPY_STANDIN = not _real_gpu_usable()
if CUPY_STANDIN:
    sys.path.insert(0, str(STANDIN_DIR))
    os.environ["PYTHONPATH"] = os.pathsep.join([str(STANDIN_DIR)] + [p for p in [os.environ.get("PYTHONPATH")] if p])

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from hypothesis import settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

import minitorch as mt  # noqa: E402
from minitorch import backend  # noqa: E402

# The machine is shared and noisy: no per-example deadline anywhere. Each test sets its own max_examples.
# In CI (the CI variable set, as CI services do) Hypothesis neither reads nor writes its example database: a failure
# stored by an earlier run (.hypothesis/ in a reused checkout) is not replayed, so every run draws afresh.
settings.register_profile("minitorch", deadline=None)
settings.register_profile("ci", deadline=None, database=None, print_blob=True)
settings.load_profile("ci" if os.environ.get("CI", "").lower() not in ("", "0", "false") else "minitorch")

NO_GPU_REASON = ("needs CuPy and a CUDA GPU (install with `pip install -e '.[gpu-cuda12]'` or '.[gpu-cuda13]'); "
                 "none is usable here")
requires_gpu = pytest.mark.skipif(not mt.cuda_available(), reason=NO_GPU_REASON)
requires_standin = pytest.mark.skipif(not CUPY_STANDIN, reason="counts host synchronisations, which only the CuPy "
                                      "stand-in records (a real GPU is in use)")


@pytest.fixture(scope="session", params=["cpu", pytest.param("cuda", marks=[requires_gpu, pytest.mark.gpu])])
def device(request):
    """Each device test runs on the CPU and on "cuda" (a real GPU where there is one, else the CuPy stand-in)."""
    return request.param


# ----- a tiny parallel corpus: six sentence pairs, the target the source's words reversed -----
PAIRS = [("the red cat sleeps .", "sleeps cat red the ."), ("a small dog runs home .", "home runs dog small a ."),
         ("two old men read books .", "books read men old two ."),
         ("the bird sings loudly .", "loudly sings bird the ."),
         ("my sister paints a blue house .", "house blue a paints sister my ."),
         ("children play in the park .", "park the in play children .")]


def write_pairs_corpus(folder, train_copies=30):
    """PAIRS as a corpus folder (train.xs/.xt repeated train_copies times, val and test once each) -> folder."""
    folder.mkdir(parents=True, exist_ok=True)
    for split, copies in (("train", train_copies), ("val", 1), ("test", 1)):
        for lang, side in (("xs", 0), ("xt", 1)):
            (folder / f"{split}.{lang}").write_text("".join(p[side] + "\n" for p in PAIRS) * copies)
    return folder


# ----- the fit commands the CLI tests run -----
FEW_PAIRS = [("the red cat sleeps .", "sleeps cat red the ."), ("a small dog runs home .", "home runs dog small a ."),
         ("two old men read books .", "books read men old two ."), ("the bird sings .", "sings bird the .")]
# a very small Transformer: fits take about a second
SMALL = ["--vocab-size", "60", "--d-model", "16", "--n-heads", "2", "--d-ff", "32", "--layers", "1", "--max-len", "32"]


def make_corpus(folder, copies=8, train_src=None, train_tgt=None):
    """train (FEW_PAIRS repeated) and val (FEW_PAIRS once) as xs -> xt; train_src/train_tgt replace the train
    files' lines."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = {"train.xs": [p[0] for p in FEW_PAIRS] * copies, "train.xt": [p[1] for p in FEW_PAIRS] * copies,
             "val.xs": [p[0] for p in FEW_PAIRS], "val.xt": [p[1] for p in FEW_PAIRS]}
    if train_src is not None:
        lines["train.xs"] = train_src
    if train_tgt is not None:
        lines["train.xt"] = train_tgt
    for name, content in lines.items():
        (folder / name).write_text("".join(line + "\n" for line in content), encoding="utf-8")
    return folder


def fit_argv(data_dir, run_dir, *extra):
    return ["fit", "--preset", "tiny", "--data-dir", str(data_dir), "--src", "xs", "--tgt", "xt", "--run-dir",
            str(run_dir), "--batch-tokens", "64", *SMALL, *extra]


def one_line_error(err):
    """The message of a one-line error on stderr (and that it is one line, without a traceback)."""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


# ----- faults that stop the run: exit status 1, one line naming the file -----


def tiny_fit(corpus, run_dir, *extra):
    return ["fit", "--preset", "tiny", "--data-dir", str(corpus), "--src", "xs", "--tgt", "xt", "--run-dir",
            str(run_dir), "--vocab-size", "200", *extra]


def records(run_dir):
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def without_timing(rs):
    return [{k: v for k, v in r.items() if k not in ("tokens_per_s", "s_per_step", "val_seconds", "wall_seconds")}
            for r in rs]


def interrupt_at(monkeypatch, step, how):
    """Make Trainer.advance send Ctrl-C (SIGINT), write a STOP file or crash right after the given step."""
    from train.loop.trainer import Trainer
    original = Trainer.advance

    def step_then_stop(self, index):
        original(self, index)
        if self.step == step:
            if how == "ctrl-c":
                signal.raise_signal(signal.SIGINT)
            elif how == "stop-file":
                (self.run_dir / "STOP").touch()
            else:
                raise RuntimeError("simulated crash")
    monkeypatch.setattr(Trainer, "advance", step_then_stop)


def final_weights(run_dir):
    return {k: v.numpy() for k, v in mt.load(run_dir / "last.npz")["model"].items()}


def stop_after(monkeypatch, step):
    """Make fit stop (as Ctrl-C would) right after the given step."""
    from train.loop.trainer import Trainer
    original = Trainer.advance

    def step_then_stop(self, index):
        updated = original(self, index)
        if self.step == step:
            signal.raise_signal(signal.SIGINT)
        return updated
    monkeypatch.setattr(Trainer, "advance", step_then_stop)


@pytest.fixture(scope="module")
def stopped_run(tmp_path_factory):
    """A run stopped at step 10 of an epoch of 18: one train record in metrics.jsonl, and `last` alone."""
    from train.commands import fit
    base = tmp_path_factory.mktemp("stopped")
    with pytest.MonkeyPatch.context() as m:
        stop_after(m, 10)
        assert fit.main(build_args(fit_argv(make_corpus(base / "corpus", copies=24), base / "run"))) == 130
    run = base / "run"
    assert {p.name for p in run.glob("*.npz")} == {"last.npz"}
    return run


def build_args(argv):
    from train.__main__ import build_parser
    return build_parser().parse_args(argv)


@pytest.fixture
def tiny_corpus(tmp_path):
    """PAIRS, repeated 30 times in train; val and test hold them once."""
    return write_pairs_corpus(tmp_path / "corpus")


@pytest.fixture
def no_cupy(monkeypatch):
    """The backend as on a machine without CuPy: device="cuda" gives its missing-CuPy error."""
    monkeypatch.setattr(backend, "_cp", None)
    monkeypatch.setattr(backend, "_cuda_checked", None)


@pytest.fixture
def syncs():
    """The stand-in's log of host synchronisations, emptied: a list of (kind, "file:line")."""
    import cupy
    cupy._standin.SYNCS.clear()
    return cupy._standin.SYNCS


# ----- shapes -----
def shapes(min_dims=0, max_dims=3, min_side=1, max_side=4):
    """Array shapes including 0-d and size-1 axes."""
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side)


def broadcast_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=4):
    """Tuples of shapes that broadcast together (differing ndim, size-1 axes, 0-d)."""
    return hnp.mutually_broadcastable_shapes(num_shapes=num_shapes, min_dims=min_dims, max_dims=max_dims,
                                             max_side=max_side).map(lambda b: b.input_shapes)


# ----- values -----
def floats(low=-3.0, high=3.0):
    return st.floats(low, high, allow_nan=False, allow_infinity=False, allow_subnormal=False, width=64)


def arrays(shape, low=-3.0, high=3.0):
    """float64 arrays of a shape with values in [low, high]."""
    return hnp.arrays(np.float64, shape, elements=floats(low, high))


def away_from_zero(shape, gap=0.1, high=3.0):
    """float64 arrays whose entries have |x| in [gap, high] (kinks of relu/abs, poles of 1/x stay far away)."""
    return st.tuples(arrays(shape, gap, high), hnp.arrays(np.bool_, shape)).map(lambda t: np.where(t[1], -t[0], t[0]))


def distinct(shape, gap=0.25):
    """float64 arrays whose entries differ pairwise by at least `gap` (no ties for max), in an order hypothesis
    picks."""
    size = int(np.prod(shape, dtype=np.int64))
    return st.permutations(range(size)).map(
        lambda p: ((np.asarray(p, dtype=np.float64) - size / 2) * gap).reshape(shape))


# under CI, a skip for anything but a GPU, dot or Multi30k fails (tests/ci_skips.py)
pytest_plugins = ["ci_skips"]


def pytest_collection_modifyitems(session, config, items):
    """test_cuda_sources.py runs last: it builds every fused call the session made on the stand-in before it."""
    items.sort(key=lambda item: item.path.name == "test_cuda_sources.py")

