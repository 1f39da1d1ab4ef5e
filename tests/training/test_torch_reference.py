"""scripts/torch_reference.py, the PyTorch eager reference for `python -m train bench`.

PyTorch is an optional extra (`pip install -e '.[reference]'`) that CI does not install: the tests that run the
model skip without it; the one about its absence always runs, with an `import torch` made to fail.
"""
import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from train.data.batching import training_batch
from train.commands.bench import build_model, synthetic_batch
from train.loop.loss import share_loss
from train.run.presets import PRESETS

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "torch_reference.py"
NO_TORCH = "needs PyTorch (pip install -e '.[reference]'), which is not installed here"


def run_script(args, env=None):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, cwd=ROOT,
                          env=env, timeout=600)


def load_script():
    spec = importlib.util.spec_from_file_location("torch_reference", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_without_torch_one_line_error(tmp_path):
    # a torch.py that fails to import, first on the path: the script must answer in one line, exit 1
    (tmp_path / "torch.py").write_text("raise ModuleNotFoundError(\"No module named 'torch'\")\n")
    path = os.pathsep.join([str(tmp_path)] + [p for p in [os.environ.get("PYTHONPATH")] if p])
    done = run_script(["--preset", "tiny"], env=dict(os.environ, PYTHONPATH=path))
    assert done.returncode == 1
    assert done.stdout == ""
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert "pip install torch" in done.stderr and ".[reference]" in done.stderr


def test_tiny_step_json():
    pytest.importorskip("torch", reason=NO_TORCH)
    done = run_script(["--preset", "tiny", "--steps", "1", "--warmup-steps", "0", "--batch-size", "4", "--seq-len", "8",
                       "--json"])
    assert done.returncode == 0, done.stderr
    r = json.loads(done.stdout)
    ours = sum(p.numel() for p in build_model(PRESETS["tiny"], "cpu", 0).parameters())
    assert r["parameters"] == r["minitorch_parameters"] == ours
    assert r["batch"]["sentences"] == 4 and r["batch"]["src_len"] == 8
    assert len(r["losses"]) == 1 and math.isfinite(r["losses"][0])
    assert r["step_s_median"] > 0 and r["tokens_per_s"] > 0


def test_same_loss_and_gradients_as_ours():
    """Our weights loaded into the torch model (dropout off) give our loss and gradients: the same model."""
    torch = pytest.importorskip("torch", reason=NO_TORCH)
    ref = load_script()
    preset = PRESETS["tiny"]
    batch = training_batch(*synthetic_batch(6, 10, preset.vocab_size, seed=1))
    ours = build_model(preset, "cpu", 1).eval()
    model = ref.Transformer(ours.cfg).eval()
    state = {name: torch.from_numpy(np.array(p.data)) for name, p in ours.state_dict().items()}
    missing, unexpected = model.load_state_dict(state, strict=False)
    assert not unexpected and set(missing) <= {"tgt_embed.weight"}   # tied: ours lists the shared weight once

    our_loss = share_loss(ours(batch[0], batch[1]), batch[2], preset.label_smoothing)
    our_loss.backward()
    loss = ref.loss_of(model, batch, preset.label_smoothing, "cpu")
    loss.backward()
    assert loss.item() == pytest.approx(float(our_loss.item()), rel=1e-5)
    grads = dict(model.named_parameters())
    for name, p in ours.named_parameters():
        np.testing.assert_allclose(grads[name].grad.numpy(), p.grad.numpy(), rtol=1e-3, atol=1e-6, err_msg=name)


def test_count_kernels_splits_one_step_by_phase():
    """--count-kernels (not run here without torch): the phases add up, and Adam and clipping in foreach form are a
    few launches for all the parameters, not some per parameter tensor."""
    pytest.importorskip("torch", reason=NO_TORCH)
    done = run_script(["--preset", "tiny", "--steps", "1", "--warmup-steps", "1", "--batch-size", "4", "--seq-len", "8",
                       "--json", "--count-kernels"])
    assert done.returncode == 0, done.stderr
    r = json.loads(done.stdout)
    n = r["kernel_launches"]
    u = n["update"]
    assert n["forward_loss"] > 0 and n["backward"] > 0 and u["optimizer"] > 0 and u["clip"] > 0
    assert u["total"] == u["zero_grad"] + u["clip"] + u["optimizer"]
    assert n["forward_loss"] + n["backward"] + u["total"] + n["read"] + n["other"] == n["total"]
    n_tensors = len(list(build_model(PRESETS["tiny"], "cpu", 0).parameters()))
    assert u["optimizer"] < n_tensors and u["zero_grad"] == 0   # set_to_none: no fill
    assert n["host_reads"] >= 1
    assert n["by_op"].get("aten::mm", 0) > 0   # mm calls only resolve_conj (no kernel): a leaf, counted


def test_foreach_ops_map_onto_cuda_launches_by_chunks():
    pytest.importorskip("torch", reason=NO_TORCH)
    ref = load_script()
    # one entry per tensor of the lists: the shapes of that tensor's operands (0-d ones left out)
    assert ref.foreach_launches([[[4, 4]]] * 101) == 1                   # one list: 110 tensors a launch
    assert ref.foreach_launches([[[4, 4]] * 4] * 101) == 3               # four lists: 36 tensors a launch
    assert ref.foreach_launches([[[65536 * 400]]]) == 2                  # 400 chunks: 320 blocks a launch
    assert ref.foreach_launches([[]] * 101) == 0                         # 0-d step counters: on the host
