"""The engine's tests need numpy, pytest and hypothesis alone: run a few of them in a fresh interpreter where the
pipeline's packages (sentencepiece, sacrebleu, matplotlib, tqdm, threadpoolctl) and `train` itself cannot be
imported, as on a machine that installed only the engine's test requirements."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]   # tests/, where conftest.py is
BLOCKED = ("sentencepiece", "sacrebleu", "matplotlib", "tqdm", "threadpoolctl", "train")
ENGINE_TESTS = ("test_tensor.py", "test_tensor_errors.py", "test_serialization.py")

RUN = f"""
import sys

class Blocked:
    '''A meta-path finder that makes the blocked packages look uninstalled.'''
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {BLOCKED!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}} (blocked by test_engine_alone)", name=name)
        return None

sys.meta_path.insert(0, Blocked())
import pytest
sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", "-x", *{[str(TESTS / "engine" / f) for f in ENGINE_TESTS]!r}]))
"""


@pytest.mark.slow
def test_the_engine_tests_run_without_the_pipelines_packages():
    done = subprocess.run([sys.executable, "-c", RUN], capture_output=True, text=True, timeout=600, cwd=TESTS.parent)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert " passed" in done.stdout.splitlines()[-1]


def test_the_blocker_blocks():
    """The same finder makes `import train` fail, so the test above cannot pass by not blocking."""
    probe = RUN.split("import pytest")[0] + "\ntry:\n    import train\nexcept ModuleNotFoundError as e:\n    print(e)\n"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert "No module named 'train' (blocked by test_engine_alone)" in done.stdout, done.stderr


@pytest.mark.parametrize("ci", ["true", None])
def test_ci_runs_neither_read_nor_write_hypothesis_database(ci):
    """With CI set, a failure stored in .hypothesis/ by an earlier run is not replayed: every run draws afresh."""
    probe = ("import conftest; from hypothesis import settings; "
             "print(settings._current_profile, type(settings.default.database).__name__)")
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env.update({"CI": ci} if ci else {})
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, cwd=TESTS,
                          env=env)
    assert done.returncode == 0, done.stderr
    profile, database = done.stdout.split()[-2:]
    assert (profile, database) == ("ci", "NoneType") if ci else profile == "minitorch"
