"""Under CI (the CI variable set), a skip for a reason other than a GPU, dot or Multi30k fails the run."""
import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent

SKIPS = '''
import pytest

def test_without_torch():
    pytest.skip("PyTorch is not installed: the comparison with it is skipped")

def test_without_a_gpu():
    pytest.skip("needs CuPy and a GPU")

def test_without_dot():
    pytest.skip("Graphviz's dot program is not installed (apt-get install graphviz)")

def test_without_the_corpus():
    pytest.skip("Multi30k not in $MINITORCH_DATA/multi30k")
'''


def run(tmp_path, ci):
    (tmp_path / "test_skips.py").write_text(SKIPS)
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS), env.get("PYTHONPATH", "")])
    if ci:
        env["CI"] = "true"
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "ci_skips", "-p", "no:cacheprovider",
                           str(tmp_path / "test_skips.py")], capture_output=True, text=True, env=env, cwd=tmp_path)
    return done.returncode, done.stdout


def test_under_ci_only_a_gpu_dot_or_the_corpus_may_skip(tmp_path):
    code, out = run(tmp_path, ci=True)
    assert code == 1 and "1 failed, 3 skipped" in out, out
    assert "test_without_torch" in out and "skipped under CI, where it must run: PyTorch is not installed" in out


def test_outside_ci_every_skip_stays_a_skip(tmp_path):
    code, out = run(tmp_path, ci=False)
    assert code == 0 and "4 skipped" in out, out
