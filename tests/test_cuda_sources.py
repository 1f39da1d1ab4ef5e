"""CI builds every fuse kernel as CuPy 14.2 would on a GPU: traced by the real CuPy into CUDA, linted, compiled.

The CuPy stand-in runs a fused body eagerly and cannot see how CuPy compiles it; scripts/cuda_sources.py asks the
real CuPy (the `gpu-build` extra: CuPy for CUDA 13, NVRTC and the CUDA headers, no GPU). The signatures built are
those of what a GPU training run calls (tests/record_fused_calls.py --training: `fit` of every model kind with
validation, beam and greedy decoding, a `small` step, the data-parallel step; in each precision of its PRECISIONS,
recorded once a session), every call of a project kernel that this pytest session made on the stand-in before this
module (conftest runs it last), and every one of a run of the engine's device tests, so that every kernel is built
when it runs alone too. Every module CuPy compiles for them is built (both passes of a CUB reduction), for sm_90 and
the oldest architecture NVRTC supports; a body that CuPy's first fusion refuses at any signature fails, naming the
kernel and the signature.
"""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import record_fused_calls

from minitorch import backend

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "cuda_sources.py"
TESTS = Path(__file__).resolve().parent
RECORDED_IN = {}   # precision -> seconds its training runs took to record


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


@pytest.fixture(scope="session")
def training_signatures(tmp_path_factory):
    """{precision: {kernel: [signature, ...]}} of record_fused_calls.RUNS on the stand-in, recorded once a session."""
    folder, recorded = tmp_path_factory.mktemp("training_calls"), {}
    for precision in record_fused_calls.PRECISIONS:
        start = time.perf_counter()
        done = record_fused_calls.record_training(folder / f"{precision}.json", precision)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        recorded[precision] = json.loads((folder / f"{precision}.json").read_text())
        RECORDED_IN[precision] = time.perf_counter() - start
    return recorded


def joined(*sources):
    """{kernel: [signature, ...]} of the project's kernels (not the stand-in tests' own fused lambdas) over sources."""
    signatures = {}
    for source in sources:
        for name, calls in source.items():
            if name in backend.FUSED:
                signatures.setdefault(name, set()).update(json.dumps(s) for s in calls)
    return {name: [json.loads(s) for s in sorted(calls)] for name, calls in signatures.items()}


def engine_test_signatures(tmp_path):
    """The engine's device tests run on the stand-in, their fused calls recorded, joined with this session's."""
    path = tmp_path / "recorded.json"
    done = record_fused_calls.record(path)
    assert done.returncode == 0, done.stdout[-3000:]
    return joined(json.loads(path.read_text()), record_fused_calls.fused_calls())


@pytest.mark.slow
def test_every_fused_kernel_builds_as_cupy_compiles_it(usable, training_signatures, tmp_path, capsys):
    """Prints (also without -s) the build's failures and summary: kernels, signatures, modules by CUB pass, times."""
    start = time.perf_counter()
    training = joined(*training_signatures.values())
    signatures = joined(training, engine_test_signatures(tmp_path))
    (tmp_path / "signatures.json").write_text(json.dumps(signatures))
    done = cuda_sources("build", tmp_path / "signatures.json", "--sources", tmp_path / "sources")
    with capsys.disabled():
        print(f"\n{done.stdout.rstrip()}\n{sum(map(len, training.values()))} of the signatures, of "
              f"{len(training)} kernels, from training runs recorded in "
              f"{', '.join(f'{p} {s:.0f} s' for p, s in RECORDED_IN.items())}; the engine's device tests recorded "
              f"and every module built in {time.perf_counter() - start:.0f} s")
    assert done.returncode == 0, done.stdout + done.stderr
    summary = done.stdout.splitlines()[-1]
    assert summary.split(" failures")[0].endswith(": 0"), done.stdout
    assert " 0 CUB second passes" not in summary, summary   # a training run's gradient norm reduces a whole buffer
    assert "sm_90" in summary and "sm_75" in summary, summary
    assert len((tmp_path / "sources" / "index.txt").read_text().splitlines()) > 100


@pytest.mark.slow
def test_the_training_runs_call_the_training_kernels(training_signatures):
    """What the recorded runs must reach for the build to stand for a GPU training run: the fused LSTM cell (lstm and
    lstm-attn), attention (the Transformer), the flat buffer's update and clipping, and a `small` step's rows of 4000
    logits (the CUB path), in each precision."""
    for precision, calls in training_signatures.items():
        names = {name.rsplit(".", 1)[-1] for name in calls}
        assert {"lstm_cell_forward", "lstm_cell_gate_grads", "lstm_cell_c_grad", "adam_update"} <= names, precision
        rows = {tuple(s[2]) for name, sigs in calls.items() for sig in sigs for s in sig if s[0] == "array"}
        assert any(shape[-1:] == (4000,) for shape in rows), precision


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


def test_the_build_fails_on_a_first_fusion_refusal_naming_kernel_and_signature(usable, tmp_path):
    """A planted kernel that CuPy's first fusion traces at 2-D arrays and refuses at 3-D ones: one failure, for the
    3-D signature; the 2-D one builds."""
    planted = {"planted_kernels.planted_refused_at_3d": [[["array", "<f4", [4, 8], [32, 4]]],
                                                         [["array", "<f4", [2, 4, 8], [128, 32, 4]]]]}
    (tmp_path / "planted.json").write_text(json.dumps(planted))
    done = cuda_sources("build", tmp_path / "planted.json", "--arch", "90", "--module", "planted_kernels", "--partial",
                        extra_path=[TESTS / "planted"])
    assert done.returncode == 1, done.stdout + done.stderr
    failures = [line for line in done.stdout.splitlines() if line.startswith("FAIL")]
    assert len(failures) == 1, done.stdout
    assert failures[0].startswith("FAIL planted_kernels.planted_refused_at_3d (<f4[2, 4, 8]): CuPy's first fusion "
                                  "refuses the body at this signature, so from this call on the whole cupy.fuse "
                                  "object runs CuPy's experimental second fusion"), failures
    assert "1 distinct CUDA sources (1 one-pass" in done.stdout.splitlines()[-1], done.stdout
