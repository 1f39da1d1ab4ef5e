"""The BLAS thread choice: --threads over an environment variable over the preset's measured choice, each process's
share of the cores in a data-parallel job, applied through threadpoolctl, printed first and recorded in config.json."""
import json

import numpy  # noqa: F401 - loads the BLAS library that threadpoolctl controls
import pytest
from conftest import fit_argv, make_corpus, one_line_error
from threadpoolctl import threadpool_info, threadpool_limits

from cli_runner import run_cli
from mpi_runner import mpirun, requires_mpi
from train import threads


@pytest.fixture(autouse=True)
def restore_blas_threads():
    """The limits these tests set are the process's; put back what the rest of the session had."""
    with threadpool_limits(limits=None):
        yield


@pytest.fixture
def no_thread_variables(monkeypatch):
    for key in threads.ENVIRONMENT:
        monkeypatch.delenv(key, raising=False)


class FakeWorld:
    def __init__(self, size):
        self.size, self.rank, self.is_main = size, 0, True


def blas_now():
    return {i["internal_api"]: i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}


def test_the_flag_wins_over_the_environment_which_wins_over_the_preset(no_thread_variables, monkeypatch):
    assert threads.choose("demo") == (1, "the demo preset's choice")
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "3")
    assert threads.choose("demo") == (3, "OPENBLAS_NUM_THREADS=3")
    assert threads.choose("demo", requested=2) == (2, "--threads")


def test_every_preset_has_a_measured_choice():
    from train.presets import PRESETS
    assert set(threads.PRESET_THREADS) == set(PRESETS)


def test_a_rank_takes_its_share_of_the_cores(no_thread_variables, monkeypatch):
    monkeypatch.setattr(threads.os, "cpu_count", lambda: 8)
    monkeypatch.setattr(threads.os, "sched_getaffinity", lambda pid: set(range(8)), raising=False)
    monkeypatch.setattr(threads, "PRESET_THREADS", {"big": 8})
    assert threads.cores() == 8 and threads.cores(local_ranks=3) == 2
    monkeypatch.setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "4")
    assert threads.choose("big", world=FakeWorld(4)) == (2, "the big preset's choice, 4 processes on 8 cores")
    assert threads.choose("big") == (8, "the big preset's choice")
    # a launcher that binds each rank to its cores has already made the share
    monkeypatch.setattr(threads.os, "sched_getaffinity", lambda pid: {0, 1, 2}, raising=False)
    assert threads.cores(local_ranks=4) == 3


def test_the_choice_is_applied_to_the_blas_library():
    before = blas_now()
    if not before:
        pytest.skip("NumPy's BLAS is not one that threadpoolctl can see")
    assert set(threads.apply(1).values()) == {1} and set(blas_now().values()) == {1}
    assert set(threads.apply(2).values()) == {2}


def test_fit_prints_the_choice_first_and_records_it_in_config_json(tmp_path, capsys, no_thread_variables):
    data = make_corpus(tmp_path / "corpus")
    status, out, err = run_cli(fit_argv(data, tmp_path / "run", "--max-steps", "1"), capsys)
    assert status == 0, err
    cores = threads.os.cpu_count()
    assert out.splitlines()[0] == (f"BLAS threads: 1, on a machine of {cores} cores (the tiny preset's choice; "
                                   f"--threads N to change)")
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["blas_threads"]["threads"] == 1 and config["blas_threads"]["chosen_by"] == "the tiny preset's choice"
    assert config["blas_threads"]["processes"] == 1

    # a resumed run records the threads of the command that continued it
    status, out, err = run_cli(fit_argv(data, tmp_path / "run", "--max-steps", "2", "--resume", "--threads", "2"),
                               capsys)
    assert status == 0, err
    assert out.splitlines()[0] == f"BLAS threads: 2, on a machine of {cores} cores (--threads 2)"
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["blas_threads"]["threads"] == 2 and config["blas_threads"]["chosen_by"] == "--threads"


def test_bench_reports_the_choice(capsys, no_thread_variables):
    status, out, err = run_cli(["bench", "--preset", "demo", "--steps", "1", "--warmup-steps", "0", "--json",
                                "--threads", "1"], capsys)
    assert status == 0, err
    result = json.loads(out)
    assert result["blas_threads_chosen_by"] == "--threads"
    assert result["blas_threads"].get("openblas", 1) == 1   # (an OpenMP runtime may be listed too: not BLAS)


@pytest.mark.parametrize("value", ["0", "two", "-1"])
def test_a_bad_thread_count_is_a_usage_error(value, capsys):
    status, out, err = run_cli(["fit", "--preset", "demo", "--threads", value], capsys)
    assert status == 2
    assert "argument --threads: expected a positive integer" in one_line_error(err)


@requires_mpi
@pytest.mark.slow
def test_each_rank_of_a_distributed_fit_takes_its_share(tmp_path):
    data = make_corpus(tmp_path / "corpus")
    no_variables = dict.fromkeys(threads.ENVIRONMENT, "")   # so that the choice is the project's own
    done = mpirun(2, ["-m", "train", *fit_argv(data, tmp_path / "run", "--max-steps", "1", "--distributed")],
                  cwd=tmp_path, **no_variables)
    assert done.returncode == 0, done.stderr
    cores = threads.os.cpu_count()
    why = f"the tiny preset's choice, 2 processes on {cores} cores"
    assert done.stdout.splitlines()[0] == f"BLAS threads: 1 per process, on a machine of {cores} cores ({why}; " \
                                          f"--threads N to change)"
    record = json.loads((tmp_path / "run" / "config.json").read_text())["blas_threads"]
    assert (record["threads"], record["chosen_by"], record["processes"]) == (1, why, 2)
