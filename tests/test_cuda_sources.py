"""CI builds every fuse kernel as CuPy 14.2 would on a GPU: traced by the real CuPy into CUDA, linted, compiled.

The CuPy stand-in runs a fused body eagerly and cannot see how CuPy compiles it; scripts/cuda_sources.py asks the
real CuPy (the `gpu-build` extra: CuPy for CUDA 13, NVRTC and the CUDA headers, no GPU). The signatures built are
every call of a project kernel that this pytest session made on the stand-in before this module (conftest runs it
last) and every one of a run of the engine's device tests, so that it also covers every kernel when it runs alone.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import record_fused_calls

from minitorch import backend

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "cuda_sources.py"
TESTS = Path(__file__).resolve().parent


def real_cupy_env(*extra):
    """The environment of a process that imports the real CuPy: PYTHONPATH without the stand-in."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), *map(str, extra)]))
    env.pop("MINITORCH_FUSED_CALLS", None)
    return env


def cuda_sources(*args, extra_path=()):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True,
                          env=real_cupy_env(*extra_path), cwd=ROOT, timeout=900)


@pytest.fixture(scope="module")
def usable():
    done = cuda_sources("check")
    if done.returncode == 2:
        pytest.skip(done.stdout.strip())
    assert done.returncode == 0, done.stdout + done.stderr


def recorded_signatures(tmp_path):
    """The engine's device tests run on the stand-in, their fused calls recorded, joined with this session's."""
    path = tmp_path / "recorded.json"
    done = record_fused_calls.record(path)
    assert done.returncode == 0, done.stdout[-3000:]
    signatures = {}
    for name, calls in [*json.loads(path.read_text()).items(),
                        *record_fused_calls.fused_calls().items()]:   # this session's, when it ran other tests first
        if name in backend.FUSED:   # the project's kernels, not the stand-in tests' own fused lambdas
            signatures.setdefault(name, set()).update(json.dumps(s) for s in calls)
    return {name: [json.loads(s) for s in sorted(calls)] for name, calls in signatures.items()}


@pytest.mark.slow
def test_every_fused_kernel_builds_as_cupy_compiles_it(usable, tmp_path):
    signatures = recorded_signatures(tmp_path)
    (tmp_path / "signatures.json").write_text(json.dumps(signatures))
    done = cuda_sources("build", tmp_path / "signatures.json", "--sources", tmp_path / "sources")
    print(done.stdout)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1].split(" failures")[0].endswith(": 0"), done.stdout
    assert len((tmp_path / "sources" / "index.txt").read_text().splitlines()) > 100


def test_the_build_fails_on_a_pre_map_write_and_on_a_cuda_error(usable, tmp_path):
    """Two planted kernels: a body that writes an argument before its reduction, and one whose CUDA does not compile."""
    planted = {"planted_kernels.planted_premap_write": [[["array", "<f4", [4, 8], [32, 4]]] * 2],
               "planted_kernels.planted_syntax_error": [[["array", "<f4", [4, 8], [32, 4]]]]}
    (tmp_path / "planted.json").write_text(json.dumps(planted))
    done = cuda_sources("build", tmp_path / "planted.json", "--arch", "90", "--module", "planted_kernels", "--partial",
                        extra_path=[TESTS / "planted"])
    assert done.returncode == 1, done.stdout + done.stderr
    assert ("FAIL planted_kernels.planted_premap_write (<f4[4, 8], <f4[4, 8]): the pre-map assigns its parameter v1, "
            "which CuPy passes by value") in done.stdout
    assert ("FAIL planted_kernels.planted_syntax_error (sm_90): NVRTC: planted_syntax_error.cu(13): error: operand of "
            '"*" must be a pointer') in done.stdout
