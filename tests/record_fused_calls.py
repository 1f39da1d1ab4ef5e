"""The signatures of every `cupy.fuse` call that the engine's device tests make on the CuPy stand-in, as JSON, for
scripts/cuda_sources.py: `python3 tests/record_fused_calls.py OUT.json` (CI's test_cuda_sources.py and
scripts/gpu_check.sh run it). It is also the pytest plugin that writes them (`-p record_fused_calls`, with tests/ on
PYTHONPATH): at the end of the run, into the file $MINITORCH_FUSED_CALLS."""
import json
import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def fused_calls():
    """{kernel name: [signature, ...]} of this process's stand-in (empty when the stand-in is not in use)."""
    import cupy
    calls = getattr(getattr(cupy, "_standin", None), "FUSED_CALLS", {})
    return {name: sorted(signatures) for name, signatures in calls.items()}


def pytest_sessionfinish(session, exitstatus):
    path = os.environ.get("MINITORCH_FUSED_CALLS")
    if path:
        with open(path, "w") as f:
            json.dump(fused_calls(), f)


def record(path):
    """Run `pytest tests/engine -k cuda` on the stand-in, writing its fused calls to path; the finished run."""
    paths = [str(TESTS), str(TESTS / "cupy_standin"), os.environ.get("PYTHONPATH", "")]
    env = dict(os.environ, MINITORCH_FUSED_CALLS=str(path), PYTHONPATH=os.pathsep.join(p for p in paths if p))
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "record_fused_calls", "-p", "no:cacheprovider",
                           "tests/engine", "-k", "cuda"], capture_output=True, text=True, env=env, cwd=TESTS.parent,
                          timeout=900)


if __name__ == "__main__":
    done = record(sys.argv[1])
    print(done.stdout[-3000:] if done.returncode else done.stdout.strip().splitlines()[-1])
    sys.exit(done.returncode)
