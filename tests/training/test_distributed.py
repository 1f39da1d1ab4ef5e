"""Data-parallel training (`mpirun -n N python -m train fit ... --distributed`): the ranks' summed gradients are the
whole batch's, all ranks hold bit-identical weights after every step, 2 ranks train like 1 process over the same
global batches, a 2-rank run resumes exactly, a failing or killed rank stops the whole job, and evaluation split
across ranks gives the same translations. The jobs are real MPI jobs (Open MPI from the `dist` extra)."""
import json
import shutil
import subprocess
import sys

import numpy as np
import pytest

import minitorch as mt
from minitorch import backend
from train.cli import parallel
from mpi_runner import REPO, mpi_env, mpirun, requires_mpi
from conftest import records, tiny_fit, without_timing

TESTS = REPO / "tests"


def fit_args(corpus, run_dir, *extra):
    return ["-m", "train", *tiny_fit(corpus, run_dir, "--batch-tokens", "96", "--lr", "3e-3", "--warmup", "10",
                                     *extra)]


def weights(run_dir, name="last"):
    return {k: v.numpy() for k, v in mt.load(run_dir / f"{name}.npz")["model"].items()}


def ok(result):
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result


def train_losses(run_dir):
    return [r["loss"] for r in records(run_dir) if r["kind"] == "train"]


# ----- without MPI -----
class FakeWorld:
    """Rank `rank` of `size`, whose allgather returns what each rank's share() would hold."""

    def __init__(self, rank, size, items):
        self.rank, self.size, self.items = rank, size, items

    def allgather_object(self, mine):
        return [[f"t{x}" for x in self.items[r::self.size]] for r in range(self.size)]


@pytest.mark.parametrize("n, size", [(7, 2), (2, 3), (0, 2), (9, 4)])
def test_shares_cover_every_item_once_and_gather_back_in_order(n, size):
    items = list(range(n))
    shares = [parallel.share(items, FakeWorld(r, size, items)) for r in range(size)]
    assert sorted(sum(shares, [])) == items
    assert max(map(len, shares)) - min(map(len, shares)) <= 1
    world = FakeWorld(0, size, items)
    assert parallel.gather_shares([f"t{x}" for x in shares[0]], world, n) == [f"t{x}" for x in items]


def test_distributed_without_mpi4py_is_a_clear_error(tiny_corpus, tmp_path, monkeypatch, capsys):
    from cli_runner import run_cli
    monkeypatch.setitem(sys.modules, "mpi4py", None)   # as if not installed
    status, _, err = run_cli(tiny_fit(tiny_corpus, tmp_path / "run", "--distributed"), capsys)
    assert status == 1
    assert "--distributed needs mpi4py" in err and "pip install -e '.[dist]'" in err


# ----- MPI jobs -----
@requires_mpi
@pytest.mark.parametrize("n_ranks, n_sentences", [(2, 7), (3, 2)])   # (3, 2): one rank has no sentence
def test_summed_gradients_of_the_shares_are_the_whole_batchs(n_ranks, n_sentences, tmp_path):
    result = ok(mpirun(n_ranks, [str(TESTS / "dist_gradient_check.py"), str(n_sentences)], cwd=tmp_path))
    assert sorted(result.stdout.split()) == sorted(sum((["ok", str(r)] for r in range(n_ranks)), []))


@requires_mpi
@pytest.mark.gpu
@pytest.mark.skipif(backend.gpu_count() < 2, reason="needs 2 GPUs (one per rank) and CuPy with NCCL")
def test_summed_gradients_through_nccl_on_two_gpus(tmp_path):
    result = ok(mpirun(2, [str(TESTS / "dist_gradient_check.py"), "7", "cuda"], cwd=tmp_path))
    assert sorted(result.stdout.split()) == ["0", "1", "ok", "ok"]


@requires_mpi
def test_one_process_with_distributed_trains_exactly_as_without(tiny_corpus, tmp_path):
    """`--distributed` outside mpirun (a job of one) changes nothing: the same weights, bit for bit."""
    plain, single = tmp_path / "plain", tmp_path / "single"
    for run_dir, extra in ((plain, ()), (single, ("--distributed",))):
        ok(subprocess.run([sys.executable, *fit_args(tiny_corpus, run_dir, "--max-steps", "8", *extra)],
                          cwd=tmp_path, env=mpi_env(), capture_output=True, text=True, timeout=240))
    a, b = weights(plain), weights(single)
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert train_losses(plain) == train_losses(single)


@requires_mpi
@pytest.mark.slow
def test_two_ranks_hold_identical_weights_and_train_like_one_process(tiny_corpus, tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    common = ("--epochs", "10", "--max-steps", "20", "--dropout", "0")
    result = ok(mpirun(2, [str(TESTS / "dist_fit_probe.py"), "check-identical",
                           *fit_args(tiny_corpus, two, *common, "--distributed")[2:]], cwd=tmp_path))
    assert "2 ranks hold identical weights (20 checked)" in result.stderr
    assert "data-parallel over 2 processes" in result.stdout
    ok(subprocess.run([sys.executable, *fit_args(tiny_corpus, one, *common)], cwd=tmp_path, env=mpi_env(),
                      capture_output=True, text=True, timeout=240))

    # the same global batches: the losses agree to float32 rounding (each rank sums its share, then the ranks add)
    np.testing.assert_allclose(train_losses(two), train_losses(one), rtol=2e-6)
    a, b = weights(one), weights(two)
    diff = np.concatenate([np.abs(a[k] - b[k]).ravel() for k in a])
    # Adam divides by sqrt(v): where the exact gradient is zero (attention's key biases: softmax ignores a shift),
    # float32 rounding noise becomes steps of size ~lr, so a few weights may differ by a few lr; the rest agree
    assert np.mean(diff <= 1e-6) >= 0.995, np.sort(diff)[-20:]
    assert diff.max() <= 5 * 3e-3
    # one rank writes: one metrics record per event, not one per rank
    steps = [(r["kind"], r["step"]) for r in records(two)]
    assert steps == [(r["kind"], r["step"]) for r in records(one)] and len(set(steps)) == len(steps)


@requires_mpi
@pytest.mark.slow
def test_two_ranks_resume_exactly_with_dropout(tiny_corpus, tmp_path):
    """Stopped at step 8 and resumed to 16 (each rank's dropout stream restored) = 16 steps in one go."""
    whole, parts = tmp_path / "whole", tmp_path / "parts"
    ok(mpirun(2, fit_args(tiny_corpus, whole, "--epochs", "3", "--max-steps", "16", "--distributed"), cwd=tmp_path))
    ok(mpirun(2, fit_args(tiny_corpus, parts, "--epochs", "3", "--max-steps", "8", "--distributed"), cwd=tmp_path))
    assert len(mt.load(parts / "last.npz")["rng_ranks"]) == 2
    alone = tmp_path / "alone"   # any number of ranks resumes from the same checkpoint: here one plain process
    shutil.copytree(parts, alone)
    config = json.loads((alone / "config.json").read_text())
    assert config["settings"]["data_dir"] == str(tiny_corpus.resolve())
    resumed_alone = ok(subprocess.run([sys.executable, *fit_args(tiny_corpus, alone, "--epochs", "3",
                                                                 "--max-steps", "12", "--resume")],
                                      cwd=tmp_path, env=mpi_env(), capture_output=True, text=True, timeout=240))
    assert "resuming at step 8" in resumed_alone.stdout and mt.load(alone / "last.npz")["progress"]["step"] == 12
    resumed = ok(mpirun(2, fit_args(tiny_corpus, parts, "--epochs", "3", "--max-steps", "16", "--distributed",
                                    "--resume"), cwd=tmp_path))
    assert "resuming at step 8" in resumed.stdout
    a, b = weights(whole), weights(parts)
    assert all(np.array_equal(a[k], b[k]) for k in a)
    last_validation = [[r for r in without_timing(records(d)) if r["kind"] == "epoch"][-1] for d in (whole, parts)]
    assert last_validation[0]["step"] == 16 and last_validation[0] == last_validation[1]


@requires_mpi
@pytest.mark.slow
def test_a_stop_file_stops_every_rank_after_the_same_step_and_the_run_resumes_exactly(tiny_corpus, tmp_path):
    """`touch RUN_DIR/STOP` (mpirun kills its processes a moment after Ctrl-C, too soon to save): rank 0 sees the
    file, the ranks agree in the next step's sum, stop together and save; the resumed run = one never stopped."""
    whole, parts = tmp_path / "whole", tmp_path / "parts"
    ok(mpirun(2, fit_args(tiny_corpus, whole, "--epochs", "3", "--max-steps", "9", "--distributed"), cwd=tmp_path))
    stopped = mpirun(2, [str(TESTS / "dist_fit_probe.py"), "stop-file", "0", "3",
                         *fit_args(tiny_corpus, parts, "--epochs", "3", "--distributed")[2:]], cwd=tmp_path)
    assert stopped.returncode == 130, stopped.stderr
    assert stopped.stderr.count(f"stopped at step 4 as {parts / 'STOP'} asked") == 1   # rank 0 alone says it
    assert "--resume --distributed" in stopped.stderr and not (parts / "STOP").exists()
    state = mt.load(parts / "last.npz")
    assert state["progress"]["step"] == 4 and len(state["rng_ranks"]) == 2
    ok(mpirun(2, fit_args(tiny_corpus, parts, "--epochs", "3", "--max-steps", "9", "--distributed", "--resume"),
              cwd=tmp_path))
    a, b = weights(whole), weights(parts)
    assert all(np.array_equal(a[k], b[k]) for k in a)


@requires_mpi
@pytest.mark.parametrize("how", ["fail", "kill"])
def test_a_failing_rank_stops_the_whole_job(tiny_corpus, tmp_path, how):
    result = mpirun(2, [str(TESTS / "dist_fit_probe.py"), how, "1", "3",
                        *fit_args(tiny_corpus, tmp_path / "run", "--distributed")[2:]], cwd=tmp_path, timeout=120)
    assert result.returncode != 0
    if how == "fail":
        assert "error on rank 1 of 2" in result.stderr and "injected failure on rank 1 after step 3" in result.stderr
    else:   # the launcher reports the killed process and takes the other one down
        assert "signal 9" in result.stderr or "Killed" in result.stderr, result.stderr


@requires_mpi
@pytest.mark.slow
def test_evaluation_split_across_ranks_gives_the_same_translations(tiny_corpus, tmp_path):
    run_dir = tmp_path / "run"
    ok(subprocess.run([sys.executable, *fit_args(tiny_corpus, run_dir, "--epochs", "4")], cwd=tmp_path, env=mpi_env(),
                      capture_output=True, text=True, timeout=240))
    evaluate = ["-m", "train", "evaluate", "--run-dir", str(run_dir), "--beam", "3", "--split", "val"]
    ok(subprocess.run([sys.executable, *evaluate], cwd=tmp_path, env=mpi_env(), capture_output=True, text=True,
                      timeout=240))
    single = (run_dir / "hyp.val.best.beam3.xt").read_text()
    result = ok(mpirun(2, [*evaluate, "--distributed"], cwd=tmp_path))
    assert (run_dir / "hyp.val.best.beam3.xt").read_text() == single
    assert result.stdout.count("BLEU ") == 2     # rank 0 alone prints (cased and lowercased BLEU)
    scores = [json.loads(line) for line in (run_dir / "evaluations.jsonl").read_text().splitlines()]
    assert len(scores) == 2 and scores[0]["bleu"] == scores[1]["bleu"]


@requires_mpi
def test_several_processes_without_distributed_are_refused(tiny_corpus, tmp_path):
    """Two copies of a one-process run would each train alone and overwrite each other's files."""
    result = mpirun(2, fit_args(tiny_corpus, tmp_path / "run"), cwd=tmp_path)
    assert result.returncode != 0
    assert "started by an MPI launcher as one of 2 processes, but without --distributed" in result.stderr
    assert not (tmp_path / "run").exists()
