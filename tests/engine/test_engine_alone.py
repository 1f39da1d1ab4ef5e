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
sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", "-p", "no:ci_skips", "-x",
                      *{[str(TESTS / "engine" / f) for f in ENGINE_TESTS]!r}]))
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


# ----- `pip install .` alone: a fresh virtual environment with the base dependencies and the test tools only -----

def local_indexes():
    """The file:// package indexes pip is configured with (this project's machines have them); the venv test
    installs from these alone, offline."""
    done = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, timeout=60)
    urls = " ".join(line.partition("=")[2].strip("'\" ") for line in done.stdout.splitlines()
                    if line.split("=")[0].endswith(("index-url", "extra-index-url"))).split()
    return [u for u in urls if u.startswith("file://") and Path(u[len("file://"):]).is_dir()]


@pytest.mark.slow
def test_a_venv_with_only_the_base_dependencies_runs_the_engine_and_train_says_which_extra(tmp_path):
    """`pip install --no-deps .`, then the base dependencies read from pyproject.toml and the engine's test tools, in
    a new venv: the engine's tests pass from the installed package (not this checkout), and `python -m train` stops
    with the one line that names the nmt extra."""
    import re
    import shutil
    indexes = local_indexes()
    if not indexes:
        pytest.skip("no local (file://) package index configured for pip: this test installs offline only")
    pyproject = (TESTS.parent / "pyproject.toml").read_text()
    dependencies = re.findall(r'"([^"]+)"', re.search(r"^dependencies = \[(.*?)\]", pyproject, re.M | re.S).group(1))
    assert dependencies == ["numpy>=1.24"], "the base install is the engine's: NumPy alone"
    source = tmp_path / "source"   # a copy, so that the build's egg-info and build/ stay out of the checkout
    for name in ("minitorch", "transformer", "train"):
        shutil.copytree(TESTS.parent / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(TESTS.parent / name, source / name)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = str(venv / "bin" / "python")
    offline = [f"--index-url={indexes[0]}", *[f"--extra-index-url={u}" for u in indexes[1:]],
               "--disable-pip-version-check", "-q"]
    for packages in (["--no-deps", str(source)], [*dependencies, "pytest", "hypothesis"]):
        done = subprocess.run([python, "-m", "pip", "install", *offline, *packages], capture_output=True, text=True,
                              timeout=600, cwd=tmp_path)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    where = subprocess.run([python, "-c", "import minitorch, sys; print(minitorch.__file__); "
                            "import importlib.util as u; print([m for m in ('sentencepiece', 'sacrebleu', "
                            "'matplotlib', 'tqdm', 'threadpoolctl') if u.find_spec(m)])"],
                           capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)
    assert where.returncode == 0, where.stderr
    assert str(venv) in where.stdout.splitlines()[0] and where.stdout.splitlines()[1] == "[]", where.stdout
    tests = [str(TESTS / "engine" / f) for f in ENGINE_TESTS]
    # (-p no:ci_skips: this venv lacks PyTorch on purpose, so its comparisons may skip here under CI too)
    done = subprocess.run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:ci_skips", "-x", *tests],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path, env=env)
    assert done.returncode == 0 and " passed" in done.stdout.splitlines()[-1], done.stdout[-3000:] + done.stderr
    train = subprocess.run([python, "-m", "train", "fit", "--preset", "demo"], capture_output=True, text=True,
                           timeout=120, cwd=tmp_path, env=env)
    assert train.returncode == 1 and train.stdout == "", (train.stdout, train.stderr)
    assert len(train.stderr.splitlines()) == 1 and "pip install '.[nmt]'" in train.stderr, train.stderr
