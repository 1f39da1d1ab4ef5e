"""A nan or infinite loss or gradient during training: the step is skipped with a warning (weights, optimizer and
schedule untouched); MAX_BAD_STEPS in a row stop the run with a one-line reason, leaving the last good checkpoint."""
import json

import numpy as np
import pytest
from conftest import fit_argv, make_corpus, one_line_error
from cli_runner import run_cli

import minitorch as mt
from minitorch.autograd import Function
from train.cli.prog import PROG
from train.loop import step


class InfiniteGradient(Function):
    """Identity forward; backward sends inf: a finite loss whose gradients are inf and nan (inf * 0 on the way)."""

    def forward(self, a):
        return a

    def backward(self, g):
        return g * np.inf


def poison(monkeypatch, bad_steps, how):
    """From the given training batches on (1-based calls of TrainStep.forward, the loss), make the loss nan or its
    gradient inf. Returns the list of (call number, snapshot of the weights and optimizer step before that call)."""
    original = step.TrainStep.forward
    calls = []

    def loss(self, *batch):
        calls.append((len(calls) + 1, {k: v.numpy().copy() for k, v in self.model.state_dict().items()},
                      self.optimizer.step_count, self.schedule.state_dict()))
        value = original(self, *batch)
        if len(calls) in bad_steps:
            value = value * float("nan") if how == "nan" else InfiniteGradient.apply(value)
        return value
    monkeypatch.setattr(step.TrainStep, "forward", loss)
    return calls


def epoch_records(run_dir):
    return [r for r in map(json.loads, (run_dir / "metrics.jsonl").read_text().splitlines()) if r["kind"] == "epoch"]


@pytest.mark.parametrize("how, what", [("nan", "the loss is nan"), ("inf", "the gradient norm is nan")])
def test_a_nonfinite_step_is_skipped_with_a_warning_and_changes_nothing(tmp_path, monkeypatch, capsys, how, what):
    data = make_corpus(tmp_path / "corpus")
    calls = poison(monkeypatch, {3, 4}, how)
    status, out, err = run_cli(fit_argv(data, tmp_path / "run", "--max-steps", "6", "--epochs", "3"), capsys)
    assert status == 0, err
    assert f"warning: epoch 1, batch 3: {what}; skipped this batch (1 in a row; the run stops at 5)" in err
    assert f"warning: epoch 1, batch 4: {what}; skipped this batch (2 in a row; the run stops at 5)" in err
    # the skipped batches left weights, optimizer step and schedule as they were
    for before, after in ((calls[2], calls[3]), (calls[3], calls[4])):
        assert all(np.array_equal(before[1][k], after[1][k]) for k in before[1])
        assert before[2] == after[2] and before[3] == after[3]
    assert calls[4][2] == 2 and not all(np.array_equal(calls[4][1][k], calls[5][1][k]) for k in calls[4][1])
    first, last = epoch_records(tmp_path / "run")        # 6 batches an epoch: epoch 1 takes 4 steps, epoch 2 two
    assert (first["skipped_batches"], first["step"], last["skipped_batches"], last["step"]) == (2, 4, 0, 6)
    assert len(calls) == 8 and all(np.isfinite(r[k]) for r in (first, last) for k in ("val_loss", "train_loss"))


def test_five_bad_steps_in_a_row_stop_the_run_and_keep_the_last_good_checkpoint(tmp_path, monkeypatch, capsys):
    data = make_corpus(tmp_path / "corpus")
    run_dir = tmp_path / "run"
    poison(monkeypatch, set(range(4, 100)), "nan")           # steps 1-3 are good, then every batch is nan
    status, out, err = run_cli(fit_argv(data, run_dir, "--save-every", "1", "--epochs", "20"), capsys)
    assert status == 1
    message = err.strip().splitlines()[-1]
    assert message == (f"{PROG} fit: error: stopped: 5 batches in a row gave a non-finite loss or gradient "
                       f"norm (the last, epoch 2 batch 2: loss nan) after step 3; the model has diverged or the data "
                       f"is broken. {run_dir / 'last.npz'} is left as the last good checkpoint (step 3). Try a lower "
                       f"--lr in a new --run-dir")
    assert "Traceback" not in err
    last = mt.load(run_dir / "last.npz")
    assert last["progress"]["step"] == 3
    assert all(np.isfinite(v.numpy()).all() for v in last["model"].values())


def test_the_stop_is_one_line_through_the_real_cli_with_a_learning_rate_that_diverges(tmp_path, capsys):
    data = make_corpus(tmp_path / "corpus")
    status, out, err = run_cli(fit_argv(data, tmp_path / "run", "--lr", "1e30", "--warmup", "1", "--epochs", "20"),
                               capsys)
    assert status == 1
    assert "stopped: 5 batches in a row gave a non-finite loss or gradient norm" in one_line_error(
        err.strip().splitlines()[-1])
    assert "RuntimeWarning" not in err
