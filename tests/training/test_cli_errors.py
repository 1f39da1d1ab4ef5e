"""The CLI's own faults: unknown presets, impossible sizes and --device cuda without CuPy or a GPU (a one-line reason,
exit status 2, nothing written); a second fit into a run folder (refused, naming the folder and --resume); and
translate, which keeps one output line per input line whatever the input holds."""
import io
import json
import shutil
import subprocess
import sys

import pytest
from conftest import SMALL, fit_argv, make_corpus, one_line_error
from cli_runner import run_cli

from train.cli.prog import PROG
from train.__main__ import main


@pytest.mark.parametrize("flags, reason", [
    (["--preset", "huge"], "argument --preset: invalid choice: 'huge' (choose from 'base', 'demo', 'small', 'tiny')"),
    (["--n-heads", "3"], "d_model 64 of --preset tiny is not divisible by --n-heads 3: each head takes d_model / "
                         "n_heads dimensions"),
    (["--d-model", "30", "--n-heads", "4"], "--d-model 30 is not divisible by --n-heads 4"),
    (["--max-len", "-5"], "argument --max-len: expected a positive integer, got -5"),
    (["--max-len", "8"], "--max-len 8 is too short: at least 14 tokens, so that decoding has room for 1.5 x the "
                         "source length + 10"),
    (["--layers", "0"], "argument --layers: expected a positive integer, got 0"),
    (["--d-ff", "-64"], "argument --d-ff: expected a positive integer, got -64"),
    (["--batch-tokens", "-1"], "argument --batch-tokens: expected a positive integer, got -1"),
    (["--model", "lstm", "--n-heads", "2"], "--n-heads sets a Transformer size; --model lstm takes only --layers, "
                                            "--max-len"),
])
def test_unknown_presets_and_impossible_sizes_exit_2_before_anything_is_written(tmp_path, capsys, flags, reason):
    argv = ["fit", "--preset", "tiny", "--data-dir", str(tmp_path), "--run-dir", str(tmp_path / "run"), *flags]
    if flags[0] == "--preset":
        argv = ["fit", *flags, "--run-dir", str(tmp_path / "run")]
    status, out, err = run_cli(argv, capsys)
    assert status == 2 and out == ""
    assert reason in one_line_error(err)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("command", [["fit", "--preset", "demo"], ["evaluate", "--run-dir", "r"],
                                     ["translate", "--run-dir", "r"]])
def test_device_cuda_without_cupy_or_a_gpu_exits_2(tmp_path, capsys, command, no_cupy):
    status, out, err = run_cli([*command, "--device", "cuda"], capsys)
    assert status == 2
    message = one_line_error(err)
    assert "argument --device: device='cuda' is not available: " in message
    assert "CuPy is not installed" in message or "no usable GPU" in message or "no GPU was found" in message


def test_the_real_cli_gives_one_line_and_status_2_without_a_traceback(tmp_path):
    for argv in (["fit", "--preset", "huge"], ["fit", "--preset", "tiny", "--n-heads", "3"]):
        done = subprocess.run([sys.executable, "-m", "train", *argv], capture_output=True, text=True, timeout=60,
                              cwd=tmp_path)
        assert done.returncode == 2 and done.stdout == ""
        one_line_error(done.stderr)


# ----- the same fit twice into one run folder -----
def test_fit_twice_into_one_folder_is_refused_naming_the_folder_and_resume(tmp_path, monkeypatch, capsys):
    data = make_corpus(tmp_path / "corpus")
    monkeypatch.chdir(tmp_path)
    argv = ["fit", "--preset", "tiny", "--data-dir", str(data), "--src", "xs", "--tgt", "xt", "--batch-tokens", "64",
            *SMALL]   # no --run-dir: the default, runs/tiny-xs-xt, as the README's command uses
    assert main([*argv, "--max-steps", "2"]) == 0
    before = (tmp_path / "runs" / "tiny-xs-xt" / "last.npz").read_bytes()
    capsys.readouterr()
    status, out, err = run_cli(argv, capsys)
    assert status == 1
    assert one_line_error(err) == (
        f"{PROG} fit: error: runs/tiny-xs-xt already holds a run stopped at step 2 (epoch 1 of 1); add "
        "--resume to continue it, or start afresh in another --run-dir (or delete the folder)")
    assert (tmp_path / "runs" / "tiny-xs-xt" / "last.npz").read_bytes() == before   # nothing lost
    assert main([*argv, "--resume"]) == 0                                           # finishes the epoch
    capsys.readouterr()
    status, out, err = run_cli(argv, capsys)
    assert status == 1
    assert one_line_error(err) == (
        f"{PROG} fit: error: runs/tiny-xs-xt already holds a run that finished its 1 epoch; translate or "
        "evaluate with it (--run-dir runs/tiny-xs-xt), train it further with --resume --epochs N, or start afresh "
        "in another --run-dir (or delete the folder)")

    # resuming it as it is: the error comes first, before the BLAS threads, corpus, model and parameter lines
    for extra, reason in ((["--resume"], "runs/tiny-xs-xt has finished its 1 epoch; pass a larger --epochs"),
                          (["--resume", "--epochs", "3", "--max-steps", "2"],
                           "already; pass a larger --max-steps")):
        status, out, err = run_cli([*argv, *extra], capsys)
        assert status == 1 and reason in one_line_error(err)
        assert out == ""


def test_resume_with_another_model_size_is_refused(tmp_path, capsys):
    data = make_corpus(tmp_path / "corpus")
    assert main(fit_argv(data, tmp_path / "run", "--max-steps", "1")) == 0
    capsys.readouterr()
    status, out, err = run_cli(fit_argv(data, tmp_path / "run", "--resume", "--d-model", "32"), capsys)
    assert status == 1
    expected = "--resume: --d-model 32 differs from the run's 16; a resumed run keeps its model sizes"
    assert expected in one_line_error(err)
    lstm = ["fit", "--preset", "tiny", "--data-dir", str(data), "--src", "xs", "--tgt", "xt", "--run-dir",
            str(tmp_path / "lstm"), "--model", "lstm", "--vocab-size", "60", "--layers", "1", "--max-len", "32"]
    assert main([*lstm, "--max-steps", "1"]) == 0
    capsys.readouterr()
    status, out, err = run_cli([*lstm, "--resume", "--n-heads", "4"], capsys)
    assert status == 2
    assert "--n-heads sets a Transformer size; this run's model is lstm" in one_line_error(err)


def test_resume_reads_the_preset_from_the_run_folder(tmp_path, capsys):
    data = make_corpus(tmp_path / "corpus")
    assert main(fit_argv(data, tmp_path / "run", "--max-steps", "1")) == 0
    assert main(["fit", "--run-dir", str(tmp_path / "run"), "--resume", "--max-steps", "2"]) == 0
    progress = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert max(r["step"] for r in progress if "step" in r) == 2
    capsys.readouterr()
    for argv in (["fit", "--resume"], ["fit", "--run-dir", str(tmp_path / "run")]):
        status, out, err = run_cli(argv, capsys)
        assert status == 2
        assert one_line_error(err).endswith("the following arguments are required: --preset (with --resume "
                                            "--run-dir RUN it is read from RUN)")


# ----- translate -----
@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    base = tmp_path_factory.mktemp("translate")
    assert main(fit_argv(make_corpus(base / "corpus"), base / "run", "--max-steps", "2")) == 0
    return base / "run"


def translate(run_dir, data, monkeypatch, capsys):
    """(exit status, stdout, stderr) of translate with `data` (bytes) on stdin."""
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))
    return run_cli(["translate", "--run-dir", str(run_dir), "--beam", "2"], capsys)


def test_translate_keeps_one_output_line_per_input_line(run_dir, monkeypatch, capsys):
    lines = [b"the red cat sleeps .", b"", b"   \t", b"a small dog runs home .\r", b"two old\rmen read books .",
             b"", b"the bird sings ."]   # empty, blank, a CRLF line end, a lone CR inside a line, no final newline
    status, out, err = translate(run_dir, b"\n".join(lines), monkeypatch, capsys)
    assert status == 0, err
    got = out.split("\n")
    assert len(got) == len(lines) + 1 and got[-1] == ""
    assert got[1] == got[2] == got[5] == ""      # blank in, blank out (the others depend on the model)
    status, out, err = translate(run_dir, b"", monkeypatch, capsys)
    assert (status, out) == (0, "")
    status, out, err = translate(run_dir, b"\n\n\n", monkeypatch, capsys)
    assert (status, out) == (0, "\n\n\n")


def test_translate_cuts_very_long_inputs_with_a_warning(run_dir, monkeypatch, capsys):
    long_line = b" ".join([b"the red cat sleeps ."] * 40)
    status, out, err = translate(run_dir, b"the bird sings .\n" + long_line + b"\n\n", monkeypatch, capsys)
    assert status == 0
    assert len(out.split("\n")) == 4 and out.split("\n")[2] == ""
    assert "warning: 1 of 3 lines (line 2) had more than 13 tokens, the most this model can translate" in err


def test_translate_names_the_line_that_is_not_utf8(run_dir, monkeypatch, capsys):
    status, out, err = translate(run_dir, b"fine\nna\xefve\n", monkeypatch, capsys)
    assert status == 1 and out == ""
    assert one_line_error(err) == (f"{PROG} translate: error: stdin, line 2: not UTF-8 text (invalid "
                                   "continuation byte: byte 0xef at byte 3 of the line)")


def test_translate_through_a_real_pipe(run_dir, tmp_path):
    shutil.copytree(run_dir, tmp_path / "run")
    done = subprocess.run([sys.executable, "-m", "train", "translate", "--run-dir", str(tmp_path / "run"), "--beam",
                           "1"], input="Grüße .\n\nthe red cat sleeps .\n".encode(), capture_output=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count(b"\n") == 3 and done.stdout.split(b"\n")[1] == b""
