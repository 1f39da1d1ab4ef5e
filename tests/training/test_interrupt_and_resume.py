"""Stopping a run from outside: Ctrl-C (SIGINT) or SIGTERM saves `last` and exits cleanly; SIGKILL at any moment
leaves the previous `last` loadable (saves are atomic), and `--resume` after it gives the same metrics and weights
as a run that was never interrupted (on the CPU, same seed)."""
import os
import random
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from conftest import fit_argv, make_corpus, without_timing
from conftest import records as all_records

import minitorch as mt
from train.cli.prog import PROG
from train.__main__ import main

LONG = ["--epochs", "40", "--save-every", "1"]   # far more steps than the tests wait for


def start_fit(argv, cwd):
    return subprocess.Popen([sys.executable, "-m", "train", *argv], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def wait_for(path, process, timeout=60):
    """Block until path exists (the run's first save), failing if the process ends first."""
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert process.poll() is None, f"fit ended early: {process.communicate()}"
        assert time.monotonic() < deadline, "no save within the time limit"
        time.sleep(0.02)


def records(run_dir):
    return without_timing(all_records(run_dir))


@pytest.mark.parametrize("sig, status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_ctrl_c_or_sigterm_saves_last_and_exits_cleanly(tmp_path, sig, status):
    data = make_corpus(tmp_path / "corpus")
    run_dir = tmp_path / "run"
    process = start_fit(fit_argv(data, run_dir, *LONG), tmp_path)
    wait_for(run_dir / "last.npz", process)
    process.send_signal(sig)
    out, err = process.communicate(timeout=60)
    assert process.returncode == status, err
    assert "Traceback" not in err
    step = mt.load(run_dir / "last.npz")["progress"]["step"]
    assert step >= 1
    assert (f"stopped at step {step}; saved {run_dir / 'last.npz'}. Continue with: {PROG} fit --preset tiny "
            f"--run-dir {run_dir} --resume") in err
    assert not list(run_dir.glob(".tmp-*"))


def test_save_is_atomic_under_sigkill(tmp_path):
    """A process rewrites one file in a loop with two different contents; killed at random moments, the file always
    loads and holds one of the two whole."""
    path = tmp_path / "state.npz"
    script = (f"import numpy as np, minitorch as mt\n"
              f"a = {{'w': np.zeros((300, 1000), np.float32), 'tag': 'a'}}\n"
              f"b = {{'w': np.ones((300, 1000), np.float32), 'tag': 'b'}}\n"
              f"mt.save(a, {str(path)!r})\n"
              f"print('ready', flush=True)\n"
              f"while True:\n"
              f"    mt.save(b, {str(path)!r}); mt.save(a, {str(path)!r})\n")
    rng = random.Random()
    for attempt in range(4):
        process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
        assert process.stdout.readline().strip() == "ready"
        delay = rng.uniform(0.0, 0.3)
        time.sleep(delay)
        process.kill()
        process.wait(timeout=30)
        loaded = mt.load(path)
        expected = 0.0 if loaded["tag"] == "a" else 1.0
        assert loaded["tag"] in ("a", "b") and np.all(loaded["w"] == expected), f"killed after {delay:.3f} s"


@pytest.mark.slow
def test_resume_after_sigkill_gives_the_metrics_of_an_uninterrupted_run(tmp_path):
    data = make_corpus(tmp_path / "corpus")
    settings = ["--epochs", "5", "--save-every", "1", "--dropout", "0.1", "--seed", "3"]   # 30 steps
    straight = tmp_path / "straight"
    assert main(fit_argv(data, straight, *settings)) == 0

    killed = tmp_path / "killed"
    process = start_fit(fit_argv(data, killed, *settings), tmp_path)
    wait_for(killed / "last.npz", process)
    delay = random.uniform(0.0, 0.6)   # the run goes on for about a second after its first save
    time.sleep(delay)
    process.kill()
    process.communicate(timeout=60)
    state = mt.load(killed / "last.npz")               # the last save is whole, wherever the kill landed
    step = state["progress"]["step"]
    total = [r for r in records(straight) if r["kind"] == "epoch"][-1]["step"]
    assert process.returncode == -signal.SIGKILL or step == total, f"killed after {delay:.3f} s"

    # finished: the last epoch's validation was saved too (a --save-every save at the last step comes before it)
    finished = state["progress"]["epoch"] >= 5
    assert main(fit_argv(data, killed, "--resume")) == (1 if finished else 0)
    assert not list(killed.glob(".tmp-*"))
    assert records(killed) == records(straight), f"killed after {delay:.3f} s at step {step}"
    a, b = (mt.load(d / "last.npz")["model"] for d in (straight, killed))
    assert a.keys() == b.keys() and all(np.array_equal(a[k].numpy(), b[k].numpy()) for k in a)
    assert os.path.getsize(killed / "best.npz") > 0 and mt.load(killed / "avg.npz")["model"]
