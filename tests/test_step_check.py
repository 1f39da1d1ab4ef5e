"""scripts/step_check.py (part 4 of scripts/gpu_check.sh) on the CuPy stand-in: one training step on the CPU and on
"cuda" from the same weights and batch agree within its float32 tolerances, and a gradient that differs fails it."""
import importlib.util
from pathlib import Path

import numpy as np
import pytest

import minitorch as mt

pytestmark = pytest.mark.skipif(not mt.cuda_available(), reason="needs CuPy and a GPU, or the CuPy stand-in")
ARGS = ["--models", "transformer,lstm-attn", "--preset", "demo", "--batch-size", "4", "--seq-len", "8"]


@pytest.fixture(scope="module")
def step_check():
    spec = importlib.util.spec_from_file_location("step_check", Path(__file__).resolve().parent.parent / "scripts" /
                                                  "step_check.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_cpu_and_gpu_steps_agree(step_check, capsys):
    assert step_check.main(ARGS) == 0
    out = capsys.readouterr().out
    for kind in ("transformer", "lstm-attn"):
        block = out[out.index(f"{kind} (demo sizes"):]
        assert "GPU float32  loss error" in block and ": ok" in block.splitlines()[1], out
        tf32, fp16 = block.splitlines()[2:4]
        assert "not available" in tf32 or tf32.endswith(": ok"), out
        assert "not available" in fp16 or fp16.endswith(": ok"), out


def test_a_gradient_that_differs_fails_the_check(step_check, capsys, monkeypatch):
    one_step = step_check.one_step

    def off_on_the_gpu(kind, preset, batch, device, precision="float32", seed=0):
        loss, grads = one_step(kind, preset, batch, device, precision, seed)
        if device == "cuda":
            name = next(iter(grads))
            grads[name] = grads[name] + 0.01 * np.sqrt(sum(float(np.sum(g ** 2)) for g in grads.values()))
        return loss, grads

    monkeypatch.setattr(step_check, "one_step", off_on_the_gpu)
    assert step_check.main(ARGS[:1] + ["transformer"] + ARGS[2:]) == 1
    assert "FAILED" in capsys.readouterr().out
