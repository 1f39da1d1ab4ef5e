"""Progress off a terminal: plain lines on stdout at a steady pace and at the end of each epoch, instead of a silent
tqdm."""
import io

from conftest import fit_argv, make_corpus
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
