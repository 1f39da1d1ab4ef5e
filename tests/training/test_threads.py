"""The BLAS thread choice: --threads over an environment variable over the count measured at start on the preset's
matrix products (here with stubbed timings), each process's share of the cores in a data-parallel job, applied through
threadpoolctl, printed first and recorded in config.json."""
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


def stub_timer(seconds):
    """A timer for threads.measure that returns {threads: seconds} and records the counts it was asked for."""
    asked = []

    def timer(shapes, n):
        asked.append(n)
        return seconds[n]
    timer.asked = asked
    return timer


def no_timing(shapes, n):
    raise AssertionError("measured although the count was given")


def on_cores(monkeypatch, n):
    monkeypatch.setattr(threads.os, "cpu_count", lambda: n)
    monkeypatch.setattr(threads.os, "sched_getaffinity", lambda pid: set(range(n)), raising=False)


def test_the_flag_wins_over_the_environment_which_wins_over_the_measurement(no_thread_variables, monkeypatch):
    on_cores(monkeypatch, 4)
    timer = stub_timer({1: 3.0, 2: 2.0, 4: 1.0})
    assert threads.choose("demo", timer=timer) == (4, "measured on the demo preset's matrix products",
                                                   {1: 3.0, 2: 2.0, 4: 1.0})
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "3")
    assert threads.choose("demo", timer=no_timing) == (3, "OPENBLAS_NUM_THREADS=3", {})
    assert threads.choose("demo", requested=2, timer=no_timing) == (2, "--threads", {})


def test_the_candidates_double_up_to_the_share():
    assert threads.candidates(1) == [1]
    assert threads.candidates(2) == [1, 2]
    assert threads.candidates(6) == [1, 2, 4, 6]
    assert threads.candidates(16) == [1, 2, 4, 8, 16]


def test_the_fastest_count_wins_and_ties_go_to_fewer_threads():
    assert threads.fastest({1: 1.0, 2: 0.5, 4: 0.3}) == 4
    assert threads.fastest({1: 1.0, 2: 2.5}) == 1                 # a busy core: more threads are slower
    assert threads.fastest({1: 1.0, 2: 0.6, 4: 0.58}) == 2        # 4 is within 10% of 2: a tie, fewer wins
    assert threads.fastest({1: 1.0, 2: 0.95}) == 1                # within 10%
    assert threads.fastest({1: 1.0, 2: 0.89}) == 2                # beyond it


def test_measuring_stops_once_more_threads_only_got_slower(no_thread_variables, monkeypatch):
    on_cores(monkeypatch, 64)
    timer = stub_timer({1: 1.0, 2: 0.6, 4: 0.4, 8: 0.7, 16: 0.2, 32: 0.1, 64: 0.1})
    assert threads.choose("small", timer=timer)[0] == 4
    assert timer.asked == [1, 2, 4, 8]   # 8 took more than 1.5 x the fastest so far


def test_the_timed_products_are_the_presets():
    from train.presets import PRESETS
    small = PRESETS["small"]
    rows = min(threads.ROWS, small.batch_tokens)
    assert threads.preset_products("small") == [(rows, 256, 1024), (rows, 1024, 256), (rows, 256, small.vocab_size)]


def test_one_core_is_not_measured(no_thread_variables, monkeypatch):
    on_cores(monkeypatch, 1)
    assert threads.choose("small", timer=no_timing) == (1, "one core for this process", {})


def test_a_rank_takes_its_share_of_the_cores(no_thread_variables, monkeypatch):
    on_cores(monkeypatch, 8)
    assert threads.cores() == 8 and threads.cores(local_ranks=3) == 2
    monkeypatch.setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "4")
    timer = stub_timer({1: 3.0, 2: 1.0, 4: 0.5, 8: 0.25})
    assert threads.choose("base", world=FakeWorld(4), timer=timer)[:2] == (
        2, "measured on the base preset's matrix products, 4 processes on 8 cores")
    assert timer.asked == [1, 2]
    assert threads.choose("base", timer=timer)[0] == 8
    # a launcher that binds each rank to its cores has already made the share
    monkeypatch.setattr(threads.os, "sched_getaffinity", lambda pid: {0, 1, 2}, raising=False)
    assert threads.cores(local_ranks=4) == 3


def test_setup_reports_and_records_the_timings(no_thread_variables, monkeypatch):
    on_cores(monkeypatch, 2)
    record, line = threads.setup("tiny", timer=stub_timer({1: 0.004, 2: 0.0025}))
    assert line == ("BLAS threads: 2, on a machine of 2 cores (measured on the tiny preset's matrix products: "
                    "1 thread 4.0 ms, 2 threads 2.5 ms; --threads N to change)")
    assert record["threads"] == 2 and record["timings_ms"] == {"1": 4.0, "2": 2.5}
    assert record["chosen_by"] == "measured on the tiny preset's matrix products"


def test_the_real_timer_times_the_products():
    seconds = threads.time_products([(8, 4, 3), (8, 3, 4)], 1)
    assert 0 < seconds < 1


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
    record = json.loads((tmp_path / "run" / "config.json").read_text())["blas_threads"]
    assert record["processes"] == 1
    if threads.cores() > 1:
        assert record["chosen_by"] == "measured on the tiny preset's matrix products"
        counts = [int(n) for n in record["timings_ms"]]   # measuring may stop before the last candidate
        assert len(counts) > 1 and counts == threads.candidates(threads.cores())[:len(counts)]
        assert record["threads"] == threads.fastest({int(n): ms for n, ms in record["timings_ms"].items()})
        assert out.splitlines()[0].startswith(f"BLAS threads: {record['threads']}, on a machine of {cores} cores "
                                              f"(measured on the tiny preset's matrix products: 1 thread ")
    else:
        assert record["threads"] == 1 and out.splitlines()[0].startswith("BLAS threads: 1,")

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
    assert set(result["blas_threads"].values()) <= {1} and list(result["blas_threads"]) == sorted(blas_now())
    assert list(result["other_threads"]) == sorted(result["other_threads"])   # e.g. sentencepiece's OpenMP pool
    assert not set(result["other_threads"]) & set(result["blas_threads"])


def test_bench_shows_the_blas_choice_apart_from_other_thread_pools(capsys, no_thread_variables):
    status, out, err = run_cli(["bench", "--preset", "demo", "--steps", "1", "--warmup-steps", "0", "--threads", "1"],
                               capsys)
    assert status == 0, err
    first = out.splitlines()[0]
    blas = ", ".join(f"{name} 1" for name in sorted(blas_now()))
    assert f"BLAS threads: {blas} (--threads; --threads N to change)" in first
    # by name, as the bench lists them (two OpenMP runtimes, PyTorch's beside another, are one name)
    others = dict(sorted((i["internal_api"], i["num_threads"]) for i in threadpool_info() if i["user_api"] != "blas"))
    if others:
        listed = ", ".join(f"{name} {n}" for name, n in others.items())
        assert first.endswith(f"; other thread pools, not set by --threads: {listed}")


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
    record = json.loads((tmp_path / "run" / "config.json").read_text())["blas_threads"]
    assert done.stdout.splitlines()[0].startswith(f"BLAS threads: {record['threads']} per process, on a machine of "
                                                  f"{cores} cores (")
    assert record["processes"] == 2 and record["chosen_by"].endswith(f", 2 processes on {cores} cores")
    assert record["threads"] <= max(cores // 2, 1)
