"""A pytest plugin (`-p record_fused_calls`, with tests/ on PYTHONPATH): at the end of the run, the signatures of every
`cupy.fuse` call the CuPy stand-in saw, as JSON in the file $MINITORCH_FUSED_CALLS (for scripts/cuda_sources.py)."""
import json
import os


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
