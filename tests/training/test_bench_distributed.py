"""`python -m train bench --distributed`: under mpirun -n 2 rank 0 alone prints one result with both ranks' figures,
the data-parallel step computes the one-process step's losses, one process works too, and flags that cannot go
with it are one-line errors. No timing is asserted."""
import json
import math

import pytest

from minitorch import distributed
from train.commands import bench
from cli_runner import run_cli
from dist_bench_micro import MICRO
from mpi_runner import REPO, mpirun, requires_mpi

SCRIPT = str(REPO / "tests" / "dist_bench_micro.py")
ARGS = ["bench", "--preset", MICRO.name, "--distributed", "--steps", "2", "--warmup-steps", "1",
        "--batch-size", "6", "--seq-len", "8"]


def positive(x):
    return isinstance(x, (int, float)) and math.isfinite(x) and x > 0


def check_result(r, n_ranks):
    """The figures of a --distributed result agree with each other."""
    assert r["mode"] == "train" and r["distributed"] and r["n_ranks"] == n_ranks and r["steps"] == 2
    b = r["batch"]
    assert b["sentences"] == 6 and len(b["rank_sentences"]) == n_ranks and sum(b["rank_sentences"]) == 6
    assert sum(b["rank_target_tokens"]) == b["target_tokens"] > 0   # the shares split the batch, nothing lost
    one, dp = r["one_process"], r["data_parallel"]
    for side in (one, dp):
        assert len(side["step_s"]) == len(side["losses"]) == 2
        for key in ("step_s_median", "step_s_min", "tokens_per_s"):
            assert positive(side[key]), key
        assert side["step_s_min"] <= side["step_s_median"]
        assert side["tokens_per_s"] == pytest.approx(b["target_tokens"] / side["step_s_median"])
    assert len(dp["rank_step_s"]) == n_ranks
    for step, job_s in enumerate(dp["step_s"]):   # a job's step lasts as long as its slowest rank's
        assert job_s == max(rank_s[step] for rank_s in dp["rank_step_s"])
    assert positive(r["speedup"]) and positive(r["scaling_efficiency"])
    assert r["speedup"] == pytest.approx(one["step_s_median"] / dp["step_s_median"])
    assert r["scaling_efficiency"] == pytest.approx(dp["tokens_per_s"] / (n_ranks * one["tokens_per_s"]))
    assert 0 <= r["allreduce_ms_median"] <= r["allreduce_with_wait_ms_median"]
    assert len(r["blas_threads"]) == n_ranks and all(r["blas_threads"])
    # without dropout, the ranks' summed gradients are the whole batch's: the same losses as one process, step by step
    assert dp["losses"] == pytest.approx(one["losses"], rel=1e-4)


@requires_mpi
def test_two_ranks_print_one_result_with_both():
    done = mpirun(2, [SCRIPT, *ARGS, "--json"], cwd=REPO)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 1, done.stdout   # rank 0 alone prints
    r = json.loads(lines[0])
    check_result(r, 2)
    assert r["batch"]["rank_sentences"] == [3, 3]
    assert positive(r["allreduce_ms_median"])
    assert r["allreduce_bytes_per_step"] == 4 * r["parameters"]   # every float32 gradient, summed once a step


@requires_mpi
def test_one_rank_under_mpirun():
    done = mpirun(1, [SCRIPT, *ARGS, "--json"], cwd=REPO)
    assert done.returncode == 0, done.stderr
    r = json.loads(done.stdout)
    check_result(r, 1)
    assert r["allreduce_bytes_per_step"] == 0   # one process sums nothing


@requires_mpi
def test_a_batch_smaller_than_the_job_is_an_error():
    done = mpirun(2, [SCRIPT, *ARGS[:-4], "--batch-size", "1", "--seq-len", "8"], cwd=REPO)
    assert done.returncode != 0 and done.stdout == ""
    assert "--batch-size 1 is smaller than the 2 processes" in done.stderr
    assert "Traceback" not in done.stderr


def test_one_process_world_table(capsys):
    """The one-process path without MPI, and its table: every figure row is there."""
    r = bench.bench_distributed(MICRO, "cpu", 6, 8, 2, 1, 0, distributed.World(), progress=False)
    check_result(r, 1)
    bench.print_distributed(r)
    out = capsys.readouterr().out
    assert "data-parallel over 1 process" in out and "BLAS threads: rank 0" in out
    for label in ("step time, median", "target tokens/s", "speed-up", "scaling efficiency",
                  "allreduce a step, median", "gradients summed a step"):
        assert sum(label in line for line in out.splitlines()) == 1, label


@pytest.mark.parametrize("argv, reason", [
    (["--mode", "decode"], "--mode decode"),
    (["--profile"], "--profile"),
])
def test_distributed_with_decode_or_profile_is_one_line(argv, reason, capsys):
    status, out, err = run_cli(["bench", "--preset", "tiny", "--distributed", *argv], capsys)
    assert status == 2 and out == "" and reason in err and "--distributed" in err
    assert len(err.strip().splitlines()) == 1
