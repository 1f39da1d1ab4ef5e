"""The CLI's handling of bad input: one line on stderr, exit status 2 for bad arguments and 1 for runtime problems,
never a traceback."""
import subprocess
import sys
import urllib.error

import pytest

from train.cli.prog import PROG
from train.data import download
from train.__main__ import COMMANDS
from cli_runner import run_cli


@pytest.mark.parametrize("argv, reason", [
    ([], "the following arguments are required: command"),
    (["train"], "invalid choice: 'train'"),
    (["fit"], "the following arguments are required: --preset (with --resume --run-dir RUN"),
    (["fit", "--preset", "huge"], "argument --preset: invalid choice: 'huge'"),
    (["fit", "--preset", "tiny", "--epochs", "0"], "argument --epochs: expected a positive integer, got 0"),
    (["fit", "--preset", "tiny", "--batch-tokens", "many"], "argument --batch-tokens: expected a positive integer"),
    (["fit", "--preset", "tiny", "--dropout", "1.5"], "argument --dropout: expected a number in [0, 1)"),
    (["fit", "--preset", "tiny", "--lr", "-1"], "argument --lr: expected a positive number"),
    (["fit", "--preset", "tiny", "--model", "gru"], "argument --model: invalid choice: 'gru'"),
    (["fit", "--preset", "tiny", "--device", "tpu"], "argument --device: invalid choice: 'tpu'"),
    (["evaluate"], "the following arguments are required: --run-dir"),
    (["evaluate", "--run-dir", "r", "--beam", "0"], "argument --beam: expected a positive integer"),
    (["translate", "--run-dir", "r", "--checkpoint", "first"], "argument --checkpoint: invalid choice"),
])
def test_bad_arguments_exit_2_with_one_line(argv, reason, capsys):
    status, out, err = run_cli(argv, capsys)
    assert status == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and reason in err


def test_runtime_problems_exit_1_with_one_line(tmp_path, capsys):
    cases = [
        (["evaluate", "--run-dir", str(tmp_path / "nope")], "no such folder"),
        (["translate", "--run-dir", str(tmp_path)], "config.json: not found"),
        (["plot", "--run-dir", str(tmp_path)], "config.json: not found"),
        (["fit", "--preset", "tiny", "--data-dir", str(tmp_path / "nope"), "--run-dir", str(tmp_path / "r")],
         "no such folder"),
        (["fit", "--preset", "demo", "--src", "de", "--run-dir", str(tmp_path / "r")], "the demo corpus is en->toy"),
    ]
    for argv, reason in cases:
        status, out, err = run_cli(argv, capsys)
        assert status == 1, argv
        assert len(err.strip().splitlines()) == 1 and reason in err, (argv, err)


def test_no_multi30k_and_no_network_explains_where_to_put_the_files(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("MINITORCH_DATA", raising=False)

    def no_network(url, timeout=None):
        raise urllib.error.URLError("Network is unreachable")
    monkeypatch.setattr(download.urllib.request, "urlopen", no_network)
    status, out, err = run_cli(["fit", "--preset", "tiny", "--run-dir", str(tmp_path / "r")], capsys)
    assert status == 1 and len(err.strip().splitlines()) == 1
    assert "Network is unreachable" in err and str(tmp_path / ".cache" / "minitorch" / "multi30k") in err


def test_cuda_without_a_gpu_is_a_clear_error(tmp_path, capsys, no_cupy):
    status, out, err = run_cli(["fit", "--preset", "demo", "--device", "cuda", "--run-dir", str(tmp_path)], capsys)
    assert status == 2 and "device='cuda' is not available" in err and len(err.strip().splitlines()) == 1


def test_check_gpu_without_cupy_says_what_to_install_and_exits_1(capsys, no_cupy):
    status, out, err = run_cli(["check-gpu"], capsys)
    assert status == 1 and out == "" and len(err.strip().splitlines()) == 1
    assert "CuPy is not installed" in err
    assert "'.[gpu-cuda12]'` (CUDA 12)" in err and "'.[gpu-cuda13]'` (CUDA 13)" in err


def test_every_command_has_help(capsys):
    for name in COMMANDS:
        status, out, err = run_cli([name, "--help"], capsys)
        assert status == 0 and out.startswith(f"usage: {PROG} {name}") and err == ""
        if name in ("fit", "evaluate", "translate", "plot"):  # the commands that work on a run folder
            assert "--run-dir" in out


def test_python_dash_m_train_reports_without_traceback(tmp_path):
    for argv, status in ((["fit", "--preset", "nope"], 2), (["evaluate", "--run-dir", str(tmp_path / "x")], 1)):
        done = subprocess.run([sys.executable, "-m", "train", *argv], capture_output=True, text=True, timeout=60)
        assert done.returncode == status
        assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
