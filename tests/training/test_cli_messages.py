"""What the CLI says to a new user: named losses, the long-line warning in lines and tokens, a run stopped before its
first epoch (only `last`), a file given as --run-dir, the interactive translate prompt, complete, wrapped help (also
under python -OO), the interpreter as the user started it, and the nearest flag for a mistyped one."""
import io
import os
import re
import subprocess
import sys

import pytest
from conftest import one_line_error

from cli_runner import run_cli
from train.cli.prog import PROG
from train.loop.trainer import MAX_BAD_STEPS
from train.loop.validation import epoch_line
from train.__main__ import COMMANDS


def stdin(monkeypatch, text, terminal=False):
    class Input(io.TextIOWrapper):
        def isatty(self):
            return terminal
    monkeypatch.setattr("sys.stdin", Input(io.BytesIO(text.encode()), encoding="utf-8"))


# ----- losses named -----
def test_the_epoch_line_names_each_loss_and_puts_ppl_beside_the_nll():
    record = {"step": 120, "train_loss": 2.3456, "val_loss": 1.003, "val_nll": 0.065, "val_ppl": 1.0672,
              "val_bleu": 99.724, "val_chrf": 99.9, "val_bleu_sentences": 400}
    assert epoch_line(record, 1) == (
        "epoch 1, step 120: label-smoothed loss: train 2.346 (epoch mean), val 1.003; val nll 0.065 (ppl 1.07); greedy "
        "val BLEU 99.72, chrF 99.90 on 400 sentences")
    assert epoch_line(record, 2, partial=True).startswith("epoch 2 (partial), step 120: ")


# ----- translate's warning about long lines -----
def test_the_long_line_warning_counts_lines_as_sent_and_explains_the_limit(stopped_run, monkeypatch, capsys):
    long_line = " ".join(["the red cat sleeps ."] * 40)
    lines = ["the bird sings .", "", long_line, "a small dog runs home .", long_line, "", "the bird sings ."]
    stdin(monkeypatch, "".join(line + "\n" for line in lines))
    status, out, err = run_cli(["translate", "--run-dir", str(stopped_run), "--beam", "1"], capsys)
    assert status == 0, err
    assert len(out.split("\n")) == len(lines) + 1
    assert err.splitlines()[1] == (
        "warning: 2 of 7 lines (lines 3, 5) had more than 13 tokens, the most this model can translate; only their "
        "first 13 tokens were translated (a translation of n tokens may take 1.5 x (n + 1) + 10 tokens plus a start "
        "token, 32 for n = 13, and must fit the model's max_len of 32 tokens)")


# ----- a run with `last` alone -----
def test_translate_and_evaluate_fall_back_to_last_with_a_note(stopped_run, monkeypatch, capsys):
    note = f"note: {stopped_run} has no best.npz yet (it is written at the end of each epoch); using last.npz"
    stdin(monkeypatch, "the bird sings .\n")
    status, out, err = run_cli(["translate", "--run-dir", str(stopped_run), "--beam", "1"], capsys)
    assert status == 0 and err.splitlines() == [note] and out.count("\n") == 1
    status, out, err = run_cli(["evaluate", "--run-dir", str(stopped_run), "--split", "val", "--beam", "1"], capsys)
    assert status == 0 and err.splitlines() == [note]
    assert "checkpoint last" in out and (stopped_run / "hyp.val.last.beam1.xt").is_file()


@pytest.mark.parametrize("command", ["translate", "evaluate", "plot"])
def test_asking_for_best_that_does_not_exist_names_the_flag_to_add(stopped_run, monkeypatch, capsys, command):
    stdin(monkeypatch, "the bird sings .\n")
    status, out, err = run_cli([command, "--run-dir", str(stopped_run), "--checkpoint", "best"], capsys)
    assert status == 1
    assert one_line_error(err) == (f"{PROG} {command}: error: {stopped_run / 'best.npz'}: no such "
                                   f"checkpoint; this run has last: add --checkpoint last")


# ----- a file given as --run-dir -----
@pytest.mark.parametrize("command", ["translate", "evaluate", "plot"])
def test_a_file_as_run_dir_is_named_as_a_file(tmp_path, monkeypatch, capsys, command):
    afile = tmp_path / "afile.txt"
    afile.write_text("not a run\n")
    stdin(monkeypatch, "")
    status, out, err = run_cli([command, "--run-dir", str(afile)], capsys)
    assert status == 1
    assert one_line_error(err) == (f"{PROG} {command}: error: --run-dir {afile}: a file, not a folder; give "
                                   f"the run folder that `{PROG} fit` made (it holds config.json)")


def test_fit_into_a_file_is_refused_before_anything_is_written(tmp_path, capsys):
    afile = tmp_path / "afile.txt"
    afile.write_text("not a run\n")
    for run_dir, why in ((afile, ""), (afile / "sub", f" ({afile} in its path is a file)")):
        status, out, err = run_cli(["fit", "--preset", "demo", "--run-dir", str(run_dir)], capsys)
        assert status == 1 and out == ""
        assert one_line_error(err) == (f"{PROG} fit: error: --run-dir {run_dir}: a file, not a folder{why}; "
                                       f"fit writes its run into a folder: give the name of a new one")
    assert afile.read_text() == "not a run\n"
    status, out, err = run_cli(["fit", "--preset", "tiny", "--data-dir", str(afile), "--run-dir",
                                str(tmp_path / "run")], capsys)
    assert status == 1
    assert one_line_error(err) == (f"{PROG} fit: error: --data-dir {afile}: a file, not a folder; give the "
                                   f"folder that holds train.de, train.en, val.de and val.en")


# ----- translate from a terminal -----
def test_translate_from_a_terminal_prompts_and_says_how_to_end(stopped_run, monkeypatch, capsys):
    stdin(monkeypatch, "the bird sings .\n\n", terminal=True)
    status, out, err = run_cli(["translate", "--run-dir", str(stopped_run), "--beam", "1", "--checkpoint", "last"],
                               capsys)
    assert status == 0, err
    assert err == ("type a sentence in xs and press Enter for its xt translation; Ctrl-D at the start of a line to "
                   "end\nxs> xs> xs> \n")
    assert out.count("\n") == 2 and out.endswith("\n\n")   # one line out per line in, the empty one empty


# ----- help -----
def test_fit_help_gives_the_number_of_bad_steps_that_stop_a_run(capsys):
    status, out, err = run_cli(["fit", "--help"], capsys)
    assert status == 0
    in_a_row = [part for part in re.split(r"[.;] ", " ".join(out.split())) if "in a row" in part]
    assert [re.findall(r"\b\d+\b", part) for part in in_a_row] == [[str(MAX_BAD_STEPS)]], in_a_row   # the number
    assert "MAX_BAD_STEPS" not in out


def test_every_help_is_wrapped_to_one_width(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")   # argparse wraps the options to the terminal; the descriptions are fixed
    for name in COMMANDS:
        status, out, err = run_cli([name, "--help"], capsys)
        assert status == 0
        too_long = [line for line in out.splitlines() if len(line) > 120]
        assert not too_long, (name, too_long)


# ----- the command as the user ran it -----
def test_the_cli_is_named_by_the_interpreter_as_it_was_started():
    from train.cli.prog import interpreter
    assert interpreter(["python3", "-m", "train"]) == "python3"
    assert interpreter(["/usr/bin/python3.11", "-m", "train"]) == "python3.11"
    assert interpreter(["python", "-m", "train"]) == "python"
    assert interpreter(["/opt/app/embedded", "-m", "train"]) == "python3"   # not a python: the README's name
    assert interpreter([]) == "python3"


def test_a_real_run_names_its_interpreter_in_errors_and_hints(tmp_path):
    done = subprocess.run([sys.executable, "-m", "train", "evaluate", "--run-dir", str(tmp_path / "x")],
                          capture_output=True, text=True, timeout=120)
    name = os.path.basename(sys.executable)
    assert done.returncode == 1 and done.stderr.startswith(f"{name} -m train evaluate: error: ")


# ----- flags: no abbreviations, and the nearest flag for a typo, from the command's own parser -----
@pytest.mark.parametrize("argv, typo, nearest, command", [
    (["fit", "--preset", "tiny", "--epohcs", "3"], "--epohcs 3", "--epochs", "fit"),
    (["fit", "--preset", "tiny", "--epoch", "1"], "--epoch 1", "--epochs", "fit"),   # not taken as --epochs
    (["evaluate", "--run-dir", "r", "--beem", "2"], "--beem 2", "--beam", "evaluate"),
    (["experiment", "depth", "--layerz", "2"], "--layerz 2", "--layers", "experiment depth"),
])
def test_a_mistyped_flag_names_the_nearest_flag_and_the_commands_help(argv, typo, nearest, command, capsys):
    status, out, err = run_cli(argv, capsys)
    assert status == 2 and out == ""
    assert one_line_error(err) == (f"{PROG} {command}: error: unrecognized arguments: {typo} (did you mean "
                                   f"{nearest}?) (see {PROG} {command} --help)")


def test_an_unknown_flag_far_from_every_flag_gets_no_suggestion(capsys):
    status, out, err = run_cli(["translate", "--run-dir", "r", "--xyzzy"], capsys)
    assert status == 2
    assert one_line_error(err) == (f"{PROG} translate: error: unrecognized arguments: --xyzzy (see {PROG} translate "
                                   f"--help)")


def test_no_parser_abbreviates():
    from train.__main__ import build_parser
    pending = [build_parser()]
    while pending:
        parser = pending.pop()
        assert parser.allow_abbrev is False, parser.prog
        pending += [p for a in parser._actions if hasattr(a, "choices") and isinstance(a.choices, dict)
                    for p in a.choices.values()]


def test_help_works_without_docstrings():
    """python -OO strips the docstrings that the commands' help is made of."""
    for argv in (["--help"], ["fit", "--help"], ["experiment", "depth", "--help"]):
        done = subprocess.run([sys.executable, "-OO", "-m", "train", *argv], capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0 and done.stderr == "" and done.stdout.startswith("usage: "), done.stderr


# ----- the two training losses -----
def test_the_progress_bar_names_its_loss_as_the_recent_steps(monkeypatch):
    from train.loop.trainer import Trainer
    from train.run.settings import Settings
    from train.loop.training_state import Progress
    trainer = Trainer.__new__(Trainer)   # only what postfix reads
    trainer.s = Settings(epochs=1, max_steps=None)
    trainer.progress = Progress(epoch=0, batch_pos=3,
                                window={"loss": 6.0, "steps": 3, "tokens": 300, "time": 1.5, "lr": 1e-3})
    assert trainer.postfix(10).startswith("label-smoothed loss 2.000 (last 3 steps), lr 1.00e-03, 200 tok/s")
    trainer.progress.window = {"loss": 0.0, "steps": 0, "tokens": 0, "time": 0.0, "last": 2.5, "last_steps": 10,
                               "speed": 50.0, "step_time": 0.1, "lr": 1e-3}
    assert trainer.postfix(10).startswith("label-smoothed loss 2.500 (last 10 steps)")
