"""Progress off a terminal: plain lines on stdout at a steady pace and at the end of each epoch, instead of a silent
tqdm."""
import io

import pytest
from conftest import fit_argv, make_corpus, records
from tqdm import tqdm

from cli_runner import run_cli
from train.cli import progress


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_lines_come_every_interval_and_at_the_end():
    out, clock = io.StringIO(), Clock()
    lines = progress.Lines(10, desc="epoch 1/2", unit="step", file=out, every=30, clock=clock)
    for second in (10, 20, 29.9):
        clock.now = second
        lines.update()
    assert out.getvalue() == ""
    clock.now = 30
    lines.set_postfix_str("label-smoothed loss 2.000")
    lines.update()
    clock.now = 45
    lines.update()
    clock.now = 61
    lines.update(2)
    lines.close()
    lines.close()   # closing twice writes nothing more
    assert out.getvalue().splitlines() == [
        "epoch 1/2: 4/10 steps (40%), label-smoothed loss 2.000",
        "epoch 1/2: 7/10 steps (70%), label-smoothed loss 2.000",
        "epoch 1/2: 7/10 steps (70%), label-smoothed loss 2.000"]


def test_a_short_loop_that_does_not_leave_its_line_stays_silent():
    out, clock = io.StringIO(), Clock()
    quick = progress.Lines(3, desc="greedy decoding", unit="batch", file=out, leave=False, clock=clock)
    quick.update(3)
    quick.close()
    assert out.getvalue() == ""
    slow = progress.Lines(3, desc="greedy decoding", unit="batch", file=out, leave=False, clock=clock)
    clock.now = 31
    slow.update()
    slow.update(2)
    slow.close()
    assert out.getvalue().splitlines() == ["greedy decoding: 1/3 batches (33%)", "greedy decoding: 3/3 batches (100%)"]


def test_a_terminal_gets_the_tqdm_bar_and_anything_else_the_lines_on_stdout(capsys):
    assert isinstance(progress.bar(5, terminal=Terminal()), tqdm)
    lines = progress.bar(5, desc="d", unit="step", terminal=io.StringIO())
    assert isinstance(lines, progress.Lines)
    lines.update(5)
    lines.close()
    silent = progress.bar(5, terminal=io.StringIO(), enabled=False)
    silent.update()
    silent.close()
    assert capsys.readouterr() == ("d: 5/5 steps (100%)\n", "")


def test_fit_off_a_terminal_prints_a_line_at_each_epoch_end(tmp_path, capsys):
    # capsys's stderr is not a terminal, as under nohup or CI; the lines go to stdout, stderr is for problems
    status, out, err = run_cli(fit_argv(make_corpus(tmp_path / "corpus"), tmp_path / "run", "--epochs", "2"), capsys)
    assert status == 0 and err == "", err
    lines = [line for line in out.splitlines() if line.startswith("epoch ") and " steps (" in line]
    assert len(lines) == 2, out
    assert lines[0].startswith("epoch 1/2: 6/6 steps (100%), label-smoothed loss ")
    assert lines[1].startswith("epoch 2/2: 6/6 steps (100%), label-smoothed loss ") and "run ETA 0:00:00" in lines[1]


# ----- clocks that stand still or go back: speeds and times left are unknown ("?"), never an error or negative -----
def test_no_time_passed_gives_unknown_speed_and_time_left():
    window = {"loss": 6.0, "steps": 3, "tokens": 300, "time": 0.0, "lr": 1e-3}
    assert progress.training_postfix(window, 10).endswith(", ? tok/s, run ETA ?")
    assert progress.training_postfix(window, 0).endswith(", ? tok/s, run ETA 0:00:00")   # nothing left to do
    after = {"loss": 0.0, "steps": 0, "tokens": 0, "time": 0.0, "last": 2.0, "last_steps": 3, "speed": None,
             "step_time": 0.0, "lr": 1e-3}   # a record of steps that took no time
    assert progress.training_postfix(after, 10).endswith(", ? tok/s, run ETA ?")
    assert progress.training_postfix({"loss": 0.0, "steps": 0, "tokens": 0, "time": 0.0}, 10).endswith(
        ", ? tok/s, run ETA ?")   # before the first step
    assert progress.elapsed(5.0, 3.0) == 0.0 and progress.elapsed(3.0, 5.5) == 2.5
    assert progress.per_second(10, 0.0) is None and progress.per_second(10, 2.0) == 5.0


def test_lines_after_a_clock_set_back_count_their_interval_from_there():
    out, clock = io.StringIO(), Clock()
    clock.now = 1000.0
    lines = progress.Lines(10, desc="epoch 1/1", unit="step", file=out, every=30, clock=clock)
    clock.now = 10.0    # set back
    lines.update()
    clock.now = 39.0
    lines.update()
    assert out.getvalue() == ""
    clock.now = 40.0
    lines.update()
    assert out.getvalue().splitlines() == ["epoch 1/1: 3/10 steps (30%)"]


class Backwards:
    """A clock that goes back a second at each reading."""

    def __init__(self):
        self.now = 1e6

    def __call__(self):
        self.now -= 1.0
        return self.now


CLOCKS = {"frozen": lambda: 1234.5, "backwards": Backwards()}


@pytest.mark.parametrize("clock", sorted(CLOCKS))
def test_fit_and_resume_under_a_clock_that_stands_still_or_goes_back(tmp_path, monkeypatch, capsys, clock):
    import time
    monkeypatch.setattr(time, "perf_counter", CLOCKS[clock])
    data, run_dir = make_corpus(tmp_path / "corpus"), tmp_path / "run"
    status, out, err = run_cli(fit_argv(data, run_dir, "--max-steps", "3"), capsys)
    assert status == 0 and "Traceback" not in err, err
    status, out2, err = run_cli(["fit", "--resume", "--run-dir", str(run_dir), "--max-steps", "5"], capsys)
    assert status == 0 and "Traceback" not in err, err
    progress_lines = [line for line in (out + out2).splitlines() if line.startswith("epoch 1/1: ")]
    # each ends at its --max-steps: no step left, whatever the speed
    assert len(progress_lines) == 2 and all(line.endswith(", ? tok/s, run ETA 0:00:00") for line in progress_lines), \
        progress_lines
    trains = [r for r in records(run_dir) if r["kind"] == "train"]
    assert trains and all(r["tokens_per_s"] is None and r["s_per_step"] == 0.0 for r in trains)
    epochs = [r for r in records(run_dir) if r["kind"] == "epoch"]
    assert epochs and all(r["val_seconds"] == 0.0 and r["wall_seconds"] == 0.0 for r in epochs)
    assert "validation took 0 s of 0 s" in out2
