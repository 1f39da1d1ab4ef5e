"""The BLAS thread choice: --threads over an environment variable over the run's recorded choice (fit --resume) over
the count measured at start on a training step's matrix products (here with stubbed timings: medians of repeated,
interleaved runs, more threads only for a clear gain), each process's share of the cores in a data-parallel job,
applied through threadpoolctl, printed first and recorded in config.json; and the run's check on its own first steps
(StepCheck), which falls back to one thread on a machine where more are slower (a simulated busy machine: step times
that depend on the thread count, from an injected clock)."""
import json
import time

import numpy  # noqa: F401 - loads the BLAS library that threadpoolctl controls
import pytest
from conftest import fit_argv, make_corpus, one_line_error
from threadpoolctl import threadpool_info, threadpool_limits

from cli_runner import run_cli
from mpi_runner import mpirun, requires_mpi
from train.run import threads
from train.run.config import RunConfig
from train.run.settings import Settings


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
    assert threads.choose("demo", timer=timer) == (
        4, "measured on a training step's matrix products of the demo preset (median of 5)", {1: 3.0, 2: 2.0, 4: 1.0})
    recorded = {"threads": 2, "chosen_by": "measured ...", "processes": 1}
    assert threads.choose("demo", timer=no_timing, recorded=recorded) == (2, "kept", {})
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "3")
    assert threads.choose("demo", timer=no_timing, recorded=recorded) == (3, "OPENBLAS_NUM_THREADS=3", {})
    assert threads.choose("demo", requested=2, timer=no_timing, recorded=recorded) == (2, "--threads", {})


def test_a_recorded_choice_is_kept_only_where_it_fits(no_thread_variables, monkeypatch):
    on_cores(monkeypatch, 2)
    timer = stub_timer({1: 1.0, 2: 2.0})
    for unusable in ({"threads": 4, "processes": 1},   # made on a bigger machine
                     {"threads": 2, "processes": 2},   # made for a job of two processes
                     {"chosen_by": "?"}, "2", None,    # damaged or missing (a run from before threads were recorded)
                     {"threads": 2, "processes": 1}, {"threads": 2, "chosen_by": 5, "processes": 1}):   # no reason
        assert threads.choose("tiny", timer=timer, recorded=unusable)[:2] == (
            1, "measured on a training step's matrix products of the tiny preset (median of 5)"), unusable


def test_the_candidates_double_up_to_the_share():
    assert threads.candidates(1) == [1]
    assert threads.candidates(2) == [1, 2]
    assert threads.candidates(6) == [1, 2, 4, 6]
    assert threads.candidates(16) == [1, 2, 4, 8, 16]


def test_more_threads_are_taken_only_for_a_clear_gain():
    assert threads.best_count({1: 1.0, 2: 0.5, 4: 0.3}) == 4
    assert threads.best_count({1: 1.0, 2: 2.5}) == 1                 # a busy core: more threads are slower
    assert threads.best_count({1: 1.0, 2: 0.6, 4: 0.58}) == 2        # 4 gains 3% on 2: not enough
    assert threads.best_count({1: 1.0, 2: 0.9}) == 1                 # 10%: not a clear gain
    assert threads.best_count({1: 1.0, 2: 0.84}) == 2                # 16%: clear
    assert threads.best_count({1: 1.0, 2: 0.9, 4: 0.6}) == 4         # 4 is clearly faster than 1


def test_measuring_stops_once_more_threads_only_got_slower(no_thread_variables, monkeypatch):
    on_cores(monkeypatch, 64)
    timer = stub_timer({1: 1.0, 2: 0.6, 4: 0.4, 8: 0.7, 16: 0.2, 32: 0.1, 64: 0.1})
    assert threads.choose("small", timer=timer)[0] == 4
    # 8 took more than 1.5 x the fastest so far: the rounds after the first time 1, 2, 4 and 8 only, in turns
    assert timer.asked == [1, 2, 4, 8] + [1, 2, 4, 8] * (threads.REPEATS - 1)


def test_a_lucky_run_on_a_busy_machine_does_not_buy_threads(no_thread_variables, monkeypatch):
    """Two cores, the other one busy: 2 threads are mostly far slower, once by luck faster (the other process
    waited). The fastest run of each count (what the command took before) would choose 2; the medians choose 1."""
    on_cores(monkeypatch, 2)
    runs = {1: iter([1.0, 1.05, 0.98, 1.02, 1.0]), 2: iter([0.7, 2.5, 3.1, 2.8, 0.9])}
    asked = []

    def busy(shapes, n):
        asked.append(n)
        return next(runs[n])
    threads_, _, timings = threads.choose("tiny", timer=busy)
    assert threads_ == 1 and timings == {1: 1.0, 2: 2.5}
    assert asked == [1, 2] * threads.REPEATS   # the counts take turns: a burst of load falls on both
    assert threads.best_count({1: 0.98, 2: 0.7}) == 2   # the fastest runs alone would have taken 2


def test_the_timed_products_are_a_training_steps():
    from train.run.presets import PRESETS
    tiny, small = threads.step_products("tiny"), threads.step_products("small")
    d, d_ff, vocab, rows = 64, 128, PRESETS["tiny"].vocab_size, PRESETS["tiny"].batch_tokens
    assert PRESETS["tiny"].model["d_model"] == d and PRESETS["tiny"].model["d_ff"] == d_ff
    # the whole batch of the tiny preset, forward and backward: 4 + 8 attention projections, 2 + 2 FFN, the output
    assert len(tiny) == 3 * (12 + 4 + 1)
    assert tiny[:3] == [(rows, d, d), (rows, d, d), (d, rows, d)]
    assert tiny[-3:] == [(rows, d, vocab), (rows, vocab, d), (d, rows, vocab)]
    # (rows, d) @ (d, d_ff): the first FFN product forward and the second's input gradient, in both layers
    assert sum(1 for shape in tiny if shape == (rows, d, d_ff)) == 4
    # small: the same shapes at its sizes, its rows cut to the cap
    flops = sum(2 * m * k * n for m, k, n in small)
    assert threads.STEP_FLOPS / 2 < flops <= threads.STEP_FLOPS
    assert small[-3][1:] == (256, PRESETS["small"].vocab_size) and small[-3][0] < PRESETS["small"].batch_tokens


def test_one_core_is_not_measured(no_thread_variables, monkeypatch):
    on_cores(monkeypatch, 1)
    assert threads.choose("small", timer=no_timing) == (1, "one core for this process", {})


def test_a_rank_takes_its_share_of_the_cores(no_thread_variables, monkeypatch):
    on_cores(monkeypatch, 8)
    assert threads.cores() == 8 and threads.cores(local_ranks=3) == 2
    monkeypatch.setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "4")
    timer = stub_timer({1: 3.0, 2: 1.0, 4: 0.5, 8: 0.25})
    assert threads.choose("base", world=FakeWorld(4), timer=timer)[:2] == (
        2, "measured on a training step's matrix products of the base preset (median of 5), 4 processes on 8 cores")
    assert set(timer.asked) == {1, 2}
    assert threads.choose("base", timer=timer)[0] == 8
    # a launcher that binds each rank to its cores has already made the share
    monkeypatch.setattr(threads.os, "sched_getaffinity", lambda pid: {0, 1, 2}, raising=False)
    assert threads.cores(local_ranks=4) == 3


def test_setup_reports_and_records_the_timings(no_thread_variables, monkeypatch):
    on_cores(monkeypatch, 2)
    record, line = threads.setup("tiny", timer=stub_timer({1: 0.004, 2: 0.0025}))
    assert line == ("BLAS threads: 2, on a machine of 2 cores (measured on a training step's matrix products of the "
                    "tiny preset (median of 5): 1 thread 4.0 ms, 2 threads 2.5 ms; --threads N to change)")
    assert record["threads"] == 2 and record["timings_ms"] == {"1": 4.0, "2": 2.5}
    assert record["chosen_by"] == "measured on a training step's matrix products of the tiny preset (median of 5)"
    kept, line = threads.setup("tiny", recorded=record, timer=no_timing)
    assert kept["threads"] == 2 and kept["chosen_by"] == record["chosen_by"]
    assert line == ("BLAS threads: 2, on a machine of 2 cores (the run's recorded choice: measured on a training "
                    "step's matrix products of the tiny preset (median of 5); --threads N to change)")


def test_the_real_timer_times_the_products():
    seconds = threads.time_products([(8, 4, 3), (8, 3, 4)], 1)
    assert 0 < seconds < 1


def test_the_choice_is_applied_to_the_blas_library():
    before = blas_now()
    if not before:
        pytest.skip("NumPy's BLAS is not one that threadpoolctl can see")
    assert set(threads.apply(1).values()) == {1} and set(blas_now().values()) == {1}
    assert set(threads.apply(2).values()) == {2}


def test_fit_prints_the_choice_first_and_records_it_in_config_json(tmp_path, capsys, no_thread_variables,
                                                                    monkeypatch):
    data = make_corpus(tmp_path / "corpus")
    status, out, err = run_cli(fit_argv(data, tmp_path / "run", "--max-steps", "1"), capsys)
    assert status == 0, err
    cores = threads.os.cpu_count()
    record = json.loads((tmp_path / "run" / "config.json").read_text())["blas_threads"]
    assert record["processes"] == 1
    if threads.cores() > 1:
        assert record["chosen_by"] == "measured on a training step's matrix products of the tiny preset (median of 5)"
        counts = [int(n) for n in record["timings_ms"]]   # measuring may stop before the last candidate
        assert len(counts) > 1 and counts == threads.candidates(threads.cores())[:len(counts)]
        assert record["threads"] == threads.best_count({int(n): ms for n, ms in record["timings_ms"].items()})
        assert out.splitlines()[0].startswith(f"BLAS threads: {record['threads']}, on a machine of {cores} cores "
                                              f"(measured on a training step's matrix products of the tiny preset "
                                              f"(median of 5): 1 thread ")
    else:
        assert record["threads"] == 1 and out.splitlines()[0].startswith("BLAS threads: 1,")

    # a resumed run keeps the run's choice, measuring nothing
    monkeypatch.setattr(threads, "time_products", no_timing)
    status, out, err = run_cli(fit_argv(data, tmp_path / "run", "--max-steps", "2", "--resume"), capsys)
    assert status == 0, err
    assert out.splitlines()[0] == (f"BLAS threads: {record['threads']}, on a machine of {cores} cores (the run's "
                                  f"recorded choice: {record['chosen_by']}; --threads N to change)")
    assert json.loads((tmp_path / "run" / "config.json").read_text())["blas_threads"]["threads"] == record["threads"]

    # unless told otherwise: then it records the threads of the command that continued it
    status, out, err = run_cli(fit_argv(data, tmp_path / "run", "--max-steps", "3", "--resume", "--threads", "2"),
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


# ----- the run's check on its own steps: a simulated busy machine -----

class StepClock:
    """Seconds of a step on a simulated machine: `per_token[threads]` seconds a token at each thread count."""

    def __init__(self, per_token):
        self.per_token, self.applied = per_token, []

    def apply(self, n):
        self.applied.append(n)
        return {"openblas": n}


def run_check(tmp_path, per_token, record=None, steps=20, world=None, device="cpu"):
    """A StepCheck of a run whose start-up measurement chose 2 threads, fed `steps` steps of 100 tokens timed by
    StepClock -> (check, clock, config, lines said)."""
    record = record or {"threads": 2, "chosen_by": "measured on a training step's matrix products of the tiny preset "
                        "(median of 5)", "processes": 1, "timings_ms": {"1": 30.0, "2": 20.0}}
    config = RunConfig(Settings(), {}, record)
    clock, said = StepClock(per_token), []
    check = threads.StepCheck(config, tmp_path, world, device, apply=clock.apply, say=said.append)
    counts = []
    for _ in range(steps):
        counts.append(check.current)
        check.after_step(100 * per_token[check.current], 100)
    return check, clock, config, said, counts


def test_a_run_falls_back_to_one_thread_where_more_are_slower(tmp_path):
    check, clock, config, said, counts = run_check(tmp_path, {1: 0.001, 2: 0.004})   # the other core busy
    timed = 2 * threads.PAIRS
    # the warm-up steps at 2, then in turns 1, 2, 1, 2, ..., then one thread for the rest of the run
    assert counts == [2] * threads.WARMUP + [1, 2] * threads.PAIRS + [1] * (20 - threads.WARMUP - timed)
    assert clock.applied == [1, 2] * threads.PAIRS + [1]
    record = config.blas_threads
    assert record["threads"] == 1 and record["before"]["threads"] == 2
    assert record["chosen_by"] == (f"fell back from 2 threads: not faster than one in steps 3-{2 + timed} of this "
                                   f"command")
    assert record["checked"]["tokens_per_s"] == {"1": 1000, "2": 250}
    assert json.loads((tmp_path / "config.json").read_text())["blas_threads"] == record   # a resume keeps it
    assert said == [f"BLAS threads: 2 threads trained at 250 tokens/s against 1,000 on one thread in steps "
                    f"3-{2 + timed} of this command (its start-up measurement expected 1.50 times one thread's speed); "
                    f"falling back to 1 thread for the rest of the run (--threads N to choose)"]


def test_a_run_keeps_more_threads_where_they_are_faster(tmp_path):
    check, clock, config, said, counts = run_check(tmp_path, {1: 0.002, 2: 0.0012})
    assert counts[-1] == 2 and clock.applied[-1] == 2 and said == []
    record = config.blas_threads
    assert record["threads"] == 2 and record["checked"]["tokens_per_s"] == {"1": 500, "2": 833}
    assert json.loads((tmp_path / "config.json").read_text())["blas_threads"] == record


@pytest.mark.parametrize("record, device", [
    ({"threads": 2, "chosen_by": "--threads", "processes": 1}, "cpu"),                 # the user's choice
    ({"threads": 2, "chosen_by": "OPENBLAS_NUM_THREADS=2", "processes": 1}, "cpu"),
    ({"threads": 1, "chosen_by": "measured on ...", "processes": 1}, "cpu"),           # nothing to fall back from
    ({"threads": 2, "chosen_by": "measured on ...", "processes": 1}, "cuda")])         # the steps are the GPU's
def test_a_given_count_one_thread_or_a_gpu_run_is_not_checked(tmp_path, record, device):
    check, clock, config, said, counts = run_check(tmp_path, {1: 0.001, 2: 0.004}, record, device=device)
    assert clock.applied == [] and said == [] and config.blas_threads == record
    assert not (tmp_path / "config.json").exists()


def test_in_a_job_rank_0s_verdict_holds_for_every_rank(tmp_path):
    class Rank1:
        size, rank, is_main = 2, 1, False

        def allgather_object(self, obj):
            return [True, obj]   # rank 0 found 2 threads slower
    check, clock, config, said, counts = run_check(tmp_path, {1: 0.002, 2: 0.001}, world=Rank1())
    assert config.blas_threads["threads"] == 1 and clock.applied[-1] == 1
    assert said == [] and not (tmp_path / "config.json").exists()   # rank 0 speaks and writes


@pytest.mark.parametrize("busy", [True, False])
def test_fit_on_a_busy_machine_falls_back_and_its_resume_keeps_one_thread(tmp_path, capsys, monkeypatch,
                                                                         no_thread_variables, busy):
    """A real fit on a simulated machine: the start-up measurement (stubbed) finds 2 threads faster, but each step
    on more than one thread costs a second more on the run's clock (the other core busy); on a quiet machine one
    thread is the slower."""
    from train.loop import step, trainer
    on_cores(monkeypatch, 2)
    monkeypatch.setattr(threads, "time_products", lambda shapes, n: {1: 0.03, 2: 0.02}[n])
    extra, counts = [0.0], []
    monkeypatch.setattr(trainer, "time", type("Clock", (), {"perf_counter": lambda: time.perf_counter() + extra[0]}))
    original = step.TrainStep.__call__

    def on_the_machine(self, *args):
        n = max(blas_now().values())
        counts.append(n)
        extra[0] += 1.0 if (n > 1) == busy else 0.0
        return original(self, *args)
    monkeypatch.setattr(step.TrainStep, "__call__", on_the_machine)
    data, run = make_corpus(tmp_path / "corpus", copies=24), tmp_path / "run"
    status, out, err = run_cli(fit_argv(data, run, "--max-steps", "14"), capsys)
    assert status == 0, err
    timed = threads.WARMUP + 2 * threads.PAIRS
    assert counts[:timed] == [2] * threads.WARMUP + [1, 2] * threads.PAIRS
    assert counts[timed:] == [1 if busy else 2] * (14 - timed)
    fell_back = [line for line in out.splitlines() if "falling back to 1 thread" in line]
    assert len(fell_back) == (1 if busy else 0), out
    assert json.loads((run / "config.json").read_text())["blas_threads"]["threads"] == (1 if busy else 2)

    counts.clear()
    monkeypatch.setattr(threads, "time_products", no_timing)
    status, out, err = run_cli(fit_argv(data, run, "--max-steps", "16", "--resume"), capsys)
    assert status == 0, err
    assert out.splitlines()[0].startswith(f"BLAS threads: {1 if busy else 2}, on a machine of 2 cores (the run's "
                                          f"recorded choice: ")
    assert counts[0] == (1 if busy else 2) and (not busy or counts == [1, 1])


# ----- a clock that stands still: timings of 0 s compare nothing, and say so in one line -----

def test_a_start_up_timed_at_zero_seconds_takes_one_thread_and_says_why(no_thread_variables, monkeypatch):
    on_cores(monkeypatch, 4)
    record, line = threads.setup("tiny", timer=stub_timer({1: 0.0, 2: 0.0, 4: 0.0}))
    assert record["threads"] == 1 and "timings_ms" not in record
    assert line == ("BLAS threads: 1, on a machine of 4 cores (not measured: the clock did not advance while the "
                    "matrix products ran; one thread; --threads N to change)")
    check = threads.StepCheck(RunConfig(Settings(), {}, record), ".", apply=no_timing)
    assert not check.active   # nothing measured: nothing to check


def test_steps_timed_at_zero_seconds_keep_the_count_and_say_why(tmp_path):
    check, clock, config, said, counts = run_check(tmp_path, {1: 0.0, 2: 0.0})
    assert counts[-1] == 2 and clock.applied[-1] == 2
    assert config.blas_threads["threads"] == 2 and config.blas_threads["checked"]["tokens_per_s"] is None
    assert json.loads((tmp_path / "config.json").read_text())["blas_threads"] == config.blas_threads
    assert said == [f"BLAS threads: not measured: the clock did not advance in steps 3-{2 + 2 * threads.PAIRS} of "
                    f"this command, so 2 threads were not compared with one; keeping 2 (--threads N to choose)"]


def test_a_fall_back_after_a_start_up_timed_at_zero_seconds_says_no_expectation(tmp_path):
    record = {"threads": 2, "chosen_by": "measured on ...", "processes": 1, "timings_ms": {"1": 0.0, "2": 0.0}}
    check, clock, config, said, counts = run_check(tmp_path, {1: 0.001, 2: 0.004}, record)
    assert config.blas_threads["threads"] == 1 and len(said) == 1
    assert "expected" not in said[0] and said[0].endswith("falling back to 1 thread for the rest of the run "
                                                          "(--threads N to choose)")


@pytest.mark.parametrize("frozen", ["everywhere", "after start-up"])
def test_fit_under_a_clock_that_stands_still_checks_its_threads_without_a_traceback(
        tmp_path, capsys, monkeypatch, no_thread_variables, frozen):
    """Every timing that start-up and the BLAS check read, on a clock that stands still: the whole process's, or (the
    start-up's stubbed to choose 2 threads) the run's, so that the check on the steps compares times of 0 s."""
    on_cores(monkeypatch, 2)
    if frozen == "everywhere":
        monkeypatch.setattr(time, "perf_counter", lambda: 1234.5)
    else:
        from train.loop import trainer
        monkeypatch.setattr(threads, "time_products", lambda shapes, n: {1: 0.03, 2: 0.02}[n])
        monkeypatch.setattr(trainer, "time", type("Clock", (), {"perf_counter": lambda: 1234.5}))
    data, run = make_corpus(tmp_path / "corpus", copies=24), tmp_path / "run"
    status, out, err = run_cli(fit_argv(data, run, "--max-steps", str(threads.WARMUP + 2 * threads.PAIRS + 1)),
                               capsys)
    assert status == 0 and "Traceback" not in err, err
    said = [line for line in out.splitlines() if "the clock did not advance" in line]
    assert len(said) == 1, out
    record = json.loads((run / "config.json").read_text())["blas_threads"]
    if frozen == "everywhere":
        assert said[0] == out.splitlines()[0] and record["threads"] == 1 and "checked" not in record
    else:
        assert "so 2 threads were not compared with one; keeping 2" in said[0]
        assert record["threads"] == 2 and record["checked"]["tokens_per_s"] is None
