"""One writer per run folder: fit holds RUN_DIR/fit.lock (the kernel's flock) for its whole life; a second fit there
stops at once with one line naming the folder and the holder, having touched nothing; a killed run leaves no lock
behind; in a data-parallel job rank 0 holds it. Readers (plot, evaluate, translate) take no lock and only ever see
whole files."""
import json
import os
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import pytest
from conftest import fit_argv, make_corpus, one_line_error, without_timing
from conftest import records as all_records

import minitorch as mt
from cli_runner import run_cli
from mpi_runner import mpirun, requires_mpi
from train.run import lock as run_lock
from train.cli.errors import TrainError
from train.cli.prog import PROG


def start_fit(argv, cwd):
    return subprocess.Popen([sys.executable, "-m", "train", *argv], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def wait_for(path, process, timeout=60):
    """Block until path exists, failing if the process ends first."""
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert process.poll() is None, f"fit ended early: {process.communicate()}"
        assert time.monotonic() < deadline, f"no {path.name} within the time limit"
        time.sleep(0.02)


def folder_state(folder):
    """{name: (bytes, modification time)} of every file in the folder, hidden ones included."""
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(folder.iterdir()) if p.is_file()}


def busy_line(run_dir, pid):
    return (f"--run-dir {run_dir}: another fit is writing this run folder (process {pid} on {socket.gethostname()}, "
            f"started ")


def test_the_lock_names_its_holder_and_a_refused_taker_writes_nothing(tmp_path):
    with run_lock.RunLock() as first:
        first.take(tmp_path)
        holder = json.loads((tmp_path / "fit.lock").read_text())
        assert holder["pid"] == os.getpid() and holder["host"] == socket.gethostname()
        before = folder_state(tmp_path)
        with pytest.raises(TrainError) as refused:   # another open file: flock refuses it even in this process
            run_lock.RunLock().take(tmp_path)
        assert str(refused.value).startswith(busy_line(tmp_path, os.getpid()) + holder["started"] + ")")
        assert str(refused.value).endswith(f"; wait for it to end, stop it (touch {tmp_path / 'STOP'}), or give "
                                           f"another --run-dir")
        assert folder_state(tmp_path) == before
    with run_lock.RunLock() as again:   # released on exit
        again.take(tmp_path)


def test_a_holder_that_has_not_written_its_details_yet_is_another_process(tmp_path, monkeypatch):
    import fcntl
    monkeypatch.setattr(run_lock, "HOLDER_WAIT", 0.05)
    fd = os.open(tmp_path / "fit.lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(TrainError, match=r"another fit is writing this run folder \(another process\)"):
            run_lock.RunLock().take(tmp_path)
    finally:
        os.close(fd)


def test_only_rank_0_locks_and_a_missing_folder_is_made_only_when_asked(tmp_path):
    class Rank1:
        rank, size, is_main = 1, 2, False
    with run_lock.RunLock(Rank1()) as lock:
        lock.take(tmp_path / "run", make=True)
        assert lock.fd is None and not (tmp_path / "run").exists()
    with run_lock.RunLock() as lock:
        lock.take(tmp_path / "run")   # not there yet: a new run's folder is made after its settings are checked
        assert lock.fd is None and not (tmp_path / "run").exists()
        lock.take(tmp_path / "run", make=True)
        assert lock.fd is not None and (tmp_path / "run" / "fit.lock").is_file()


def test_a_fit_on_a_locked_folder_stops_before_it_checks_anything(tmp_path, capsys):
    data, run = make_corpus(tmp_path / "corpus"), tmp_path / "run"
    assert run_cli(fit_argv(data, run, "--max-steps", "2"), capsys)[0] == 0
    before = folder_state(run)
    with run_lock.RunLock() as holder:
        holder.take(run)
        before["fit.lock"] = (run / "fit.lock").read_bytes(), (run / "fit.lock").stat().st_mtime_ns
        for extra in (["--resume", "--max-steps", "3"], ["--max-steps", "3"]):   # a new run there, too
            status, out, err = run_cli(fit_argv(data, run, *extra), capsys)
            assert status == 1 and out == ""
            assert one_line_error(err).startswith(f"{PROG} fit: error: {busy_line(run, os.getpid())}")
        assert folder_state(run) == before
    assert run_cli(fit_argv(data, run, "--resume", "--max-steps", "3"), capsys)[0] == 0


@pytest.mark.slow
def test_two_fits_on_one_folder_the_second_stops_at_once_the_first_finishes_and_resumes_exactly(tmp_path, capsys):
    data, run = make_corpus(tmp_path / "corpus", copies=24), tmp_path / "run"
    settings = ["--epochs", "3", "--save-every", "1", "--dropout", "0.1", "--seed", "4"]   # 54 steps
    first = start_fit(fit_argv(data, run, *settings), tmp_path)
    try:
        wait_for(run / "last.npz", first)
        # frozen mid-run, holding its lock: the folder changes only if the second fit writes into it
        first.send_signal(signal.SIGSTOP)
        assert first.poll() is None, f"the first fit ended before the test could stop it: {first.communicate()}"
        before = folder_state(run)
        started = time.monotonic()
        second = subprocess.run([sys.executable, "-m", "train", *fit_argv(data, run, "--resume")], cwd=tmp_path,
                                capture_output=True, text=True, timeout=120)
        seconds = time.monotonic() - started
        print(f"the second fit exited after {seconds:.2f} s (Python's start included)")
        assert second.returncode == 1 and second.stdout == "", (second.stdout, second.stderr)
        assert one_line_error(second.stderr).startswith(f"{PROG} fit: error: {busy_line(run, first.pid)}")
        assert folder_state(run) == before and first.poll() is None

        # readers keep reading: plot draws the run's curves from what the first has written so far
        status, out, err = run_cli(["plot", "--run-dir", str(run)], capsys)
        assert status == 0, err
    finally:
        first.send_signal(signal.SIGCONT)
    out, err = first.communicate(timeout=120)
    assert first.returncode == 0, err

    # the first run is the run it would have been alone, and it continues exactly
    from train.__main__ import main
    straight = tmp_path / "straight"
    assert main(fit_argv(data, straight, *settings[:1], "4", *settings[2:])) == 0
    assert main(fit_argv(data, run, "--resume", "--epochs", "4")) == 0
    assert without_timing(all_records(run)) == without_timing(all_records(straight))
    a, b = (mt.load(d / "last.npz")["model"] for d in (straight, run))
    assert all(np.array_equal(a[k].numpy(), b[k].numpy()) for k in a)


def test_a_killed_run_leaves_no_lock_behind(tmp_path, capsys):
    data, run = make_corpus(tmp_path / "corpus", copies=24), tmp_path / "run"
    killed = start_fit(fit_argv(data, run, "--epochs", "40", "--save-every", "1"), tmp_path)
    wait_for(run / "last.npz", killed)
    killed.kill()
    killed.communicate(timeout=60)
    assert json.loads((run / "fit.lock").read_text())["pid"] == killed.pid   # the file stays, naming the dead holder
    status, out, err = run_cli(fit_argv(data, run, "--resume", "--max-steps", "40"), capsys)   # no clean-up first
    assert status == 0, err
    assert json.loads((run / "fit.lock").read_text())["pid"] == os.getpid()


def test_a_reader_never_sees_a_checkpoint_half_written(tmp_path):
    """A process replaces best.npz over and over with one of two models (as fit does after an epoch) while this one
    loads it the way evaluate and translate do: every load is one of the two, whole."""
    path = tmp_path / "best.npz"
    script = (f"import numpy as np, minitorch as mt\n"
              f"a = {{'model': {{'w': np.zeros((200, 1000), np.float32)}}, 'tag': 'a'}}\n"
              f"b = {{'model': {{'w': np.ones((200, 1000), np.float32)}}, 'tag': 'b'}}\n"
              f"mt.save(a, {str(path)!r})\n"
              f"print('ready', flush=True)\n"
              f"while True:\n"
              f"    mt.save(b, {str(path)!r}); mt.save(a, {str(path)!r})\n")
    writer = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline().strip() == "ready"
        from train.run import checkpoint
        for _ in range(150):
            loaded = checkpoint.load(path)   # TrainError (the test fails) on a truncated or damaged file
            w = np.asarray(loaded["model"]["w"])
            assert np.all(w == (0.0 if loaded["tag"] == "a" else 1.0))
        assert writer.poll() is None   # it was writing all along
    finally:
        writer.kill()
        writer.wait(timeout=30)


def test_plot_leaves_out_a_record_being_appended(tmp_path):
    from train.commands.plot import read_metrics
    path = tmp_path / "metrics.jsonl"
    path.write_text('{"kind": "train", "step": 10}\n{"kind": "epo')
    assert read_metrics(path) == [{"kind": "train", "step": 10}]
    path.write_text('{"kind": "train", "step": 10}\n{"kind": "epo\n')   # a whole line that is not JSON: damaged
    with pytest.raises(TrainError, match="line 2: not JSON"):
        read_metrics(path)


@requires_mpi
@pytest.mark.slow
def test_in_a_distributed_fit_rank_0_holds_the_lock(tmp_path):
    data, run = make_corpus(tmp_path / "corpus"), tmp_path / "run"
    with run_lock.RunLock() as holder:
        holder.take(run, make=True)
        done = mpirun(2, ["-m", "train", *fit_argv(data, run, "--max-steps", "1", "--distributed")], cwd=tmp_path)
        assert done.returncode != 0
        assert f"error on rank 0 of 2: {busy_line(run, os.getpid())}" in done.stderr
        assert sorted(p.name for p in run.iterdir()) == ["fit.lock"]
    done = mpirun(2, ["-m", "train", *fit_argv(data, run, "--max-steps", "1", "--distributed")], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
