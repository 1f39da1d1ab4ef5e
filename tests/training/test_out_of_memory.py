"""Out of memory in any phase of fit is one line, "out of memory during PHASE", and leaves a run folder that
`fit --resume` continues (or, without a last.npz yet, that the same command starts afresh): a sweep of address-space
limits (ulimit -v, RLIMIT_AS) over a subprocess `fit`; and the child process that SentencePiece's training and
OpenBLAS's first allocation run in, whose abort or exit is reported as a line, not passed on."""
import os
import re
import subprocess
import sys

import pytest
from conftest import make_corpus

from train.cli import memory
from train.cli.errors import TrainError

resource = pytest.importorskip("resource", reason="address-space limits (RLIMIT_AS) are a Unix feature")
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS bounds the address space "
                                "only on Linux (macOS ignores it)")

# a model of about 5 million parameters, so that the limits below fall in different phases of fit
SIZES = ["--vocab-size", "60", "--d-model", "256", "--n-heads", "2", "--d-ff", "4096", "--layers", "2", "--max-len",
         "32", "--batch-tokens", "64"]
# MB: on the machine this was written on (a sweep of 120 limits from 30 to 480 MB, each one line), 30-134 fall in
# start-up (below 94 OpenBLAS's exit, in a child), 136-154 in tokenizer training, 160-360 in model build, 370-430 in the
# first steps, 440-480 in checkpointing; elsewhere they fall where they fall, each must give one line; 4096 is enough
LIMITS_MB = [80, 110, 140, 150, 200, 300, 380, 450, 4096]
LINE = re.compile(r"^python3 -m train( fit)?: error: out of memory during (?P<phase>.+?) \(ulimit -v limits this "
                  r"process to (?P<mb>\d+) MB\)")


def fit(data, run_dir, limit_mb=None, *extra):
    def limit():
        if limit_mb:
            resource.setrlimit(resource.RLIMIT_AS, (limit_mb << 20, limit_mb << 20))
    argv = [sys.executable, "-m", "train", "fit", "--preset", "tiny", "--data-dir", str(data), "--src", "xs", "--tgt",
            "xt", "--run-dir", str(run_dir), *SIZES, "--max-steps", "2", *extra]
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    return subprocess.run(argv, capture_output=True, text=True, timeout=300, preexec_fn=limit, env=env)


@linux_only
@pytest.mark.slow
def test_a_sweep_of_memory_limits_gives_one_line_and_a_run_folder_to_continue(tmp_path):
    data = make_corpus(tmp_path / "corpus")
    outcomes = {}
    for mb in LIMITS_MB:
        run_dir = tmp_path / f"run-{mb}"
        done = fit(data, run_dir, mb)
        if done.returncode == 0:
            outcomes[mb] = "trained"
            continue
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 1 and len(lines) == 1 and "Traceback" not in done.stderr, (mb, done.stderr)
        match = LINE.match(lines[0])
        assert match and int(match["mb"]) == mb, (mb, lines[0])
        outcomes[mb] = match["phase"]
        if not run_dir.exists():   # it stopped before it made the folder
            continue
        if (run_dir / "last.npz").exists():
            again = subprocess.run([sys.executable, "-m", "train", "fit", "--resume", "--run-dir", str(run_dir),
                                    "--max-steps", "3"], capture_output=True, text=True, timeout=300)
        else:   # no training to lose: the same command, with memory enough, starts afresh
            again = fit(data, run_dir)
        assert again.returncode == 0, (mb, again.stderr)
    print(f"memory limits tried: {len(LIMITS_MB)}: " + ", ".join(f"{mb} MB {what}" for mb, what in outcomes.items()))
    assert outcomes[LIMITS_MB[-1]] == "trained"


def aborts():
    os.abort()


def fails():
    raise ValueError("a bad value")


def test_a_child_returns_its_value_or_raises_its_exception_here():
    assert memory.in_child("a phase", "", sum, [1, 2, 3]) == 6
    with pytest.raises(ValueError, match="a bad value"):
        memory.in_child("a phase", "", fails)


def test_a_child_that_aborts_is_one_line_naming_the_phase(monkeypatch):
    with pytest.raises(TrainError, match=r"^a phase failed: its process ended with signal SIGABRT$"):
        memory.in_child("a phase", "", aborts)
    monkeypatch.setattr(memory, "limit_text", lambda: " (ulimit -v limits this process to 150 MB)")
    with pytest.raises(memory.OutOfMemory, match=r"^out of memory during a phase \(ulimit -v limits this process to "
                                                 r"150 MB\) \[signal SIGABRT\]; less$"):
        memory.in_child("a phase", "less", aborts)


@pytest.mark.parametrize("error", [MemoryError(), RuntimeError("Resource temporarily unavailable"),
                                   ImportError("x.so: failed to map segment from shared object"),
                                   OSError(12, "Cannot allocate memory")])
def test_the_ways_of_saying_out_of_memory_become_the_line_of_the_phase(error):
    with pytest.raises(memory.OutOfMemory, match=r"^out of memory during model build.*; a smaller model"):
        with memory.during("model build", "a smaller model"):
            raise error
    with pytest.raises(RuntimeError, match="something else"):   # anything else passes as it is
        with memory.during("model build"):
            raise RuntimeError("something else")


ENCODE_UNDER_A_LIMIT = """
import resource, sys
from train.data.tokenizer import Tokenizer
tok = Tokenizer(sys.argv[1])
lines = [f"the cat {i} sat on the mat {i % 7}" for i in range(2000)]
size = int(next(line for line in open("/proc/self/status") if line.startswith("VmSize")).split()[1]) << 10
resource.setrlimit(resource.RLIMIT_AS, (size + (int(sys.argv[2]) << 20),) * 2)
print("encoded", len(tok.encode(lines)))
"""


@linux_only
@pytest.mark.parametrize("room_mb", [4, 9])
def test_encoding_starts_no_thread_that_could_abort_the_process(tmp_path, room_mb):
    """SentencePiece encodes a list on a pool of threads, one 8 MiB stack each: with room for no stack it raised,
    with room for one and not two it aborted the process (std::terminate: `fit` died of signal 6 in data encoding).
    The tokenizer encodes sentence by sentence, in the process's own thread."""
    from train.data.tokenizer import train_tokenizer
    model = tmp_path / "spm.model"
    train_tokenizer([f"the cat {i} sat on the mat" for i in range(300)], model, 40)
    done = subprocess.run([sys.executable, "-c", ENCODE_UNDER_A_LIMIT, str(model), str(room_mb)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "encoded 2000", (done.returncode, done.stderr)


def first_limit(data, low, high, passes, tmp_path, step=10):
    """The lowest limit in MB, in [low, high] on a grid of `step`, at which passes(the finished fit) holds (it holds
    at every limit above one where it does: more memory gets at least as far); high if none below it does."""
    grid = list(range(low, high + 1, step))
    lo, hi = 0, len(grid) - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if passes(fit(data, tmp_path / f"probe-{grid[mid]}", grid[mid])):
            hi = mid
        else:
            lo = mid + 1
    return grid[lo]


@linux_only
@pytest.mark.slow
def test_every_limit_from_the_first_that_starts_to_the_first_that_trains_gives_one_line(tmp_path):
    """Each limit in steps of 10 MB from the first at which fit gets past loading its libraries to the first at which
    it trains: out of memory is one line naming the phase and the limit, whatever the phase (no signal, no
    traceback)."""
    data = make_corpus(tmp_path / "corpus")

    def started(done):
        return done.returncode == 0 or "during start-up" not in done.stderr
    first = first_limit(data, 30, 1000, started, tmp_path)
    trains = first_limit(data, first, 1500, lambda done: done.returncode == 0, tmp_path)
    assert trains > first, (first, trains)
    phases = {}
    for mb in range(first, trains, 10):
        done = fit(data, tmp_path / f"run-{mb}", mb)
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 1 and len(lines) == 1 and "Traceback" not in done.stderr, (mb, done.returncode,
                                                                                            done.stderr)
        match = LINE.match(lines[0])
        assert match and int(match["mb"]) == mb, (mb, lines[0])
        phases.setdefault(match["phase"], []).append(mb)
    print(f"limits {first}-{trains - 10} MB in steps of 10 (trains from {trains} MB): " +
          "; ".join(f"{phase} {mbs[0]}-{mbs[-1]}" for phase, mbs in phases.items()))
