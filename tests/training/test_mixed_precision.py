"""fit --precision fp16 on the CuPy stand-in (or a GPU): the demo preset reaches the float32 run's validation loss,
overflows are skipped and the scale backs off, an interrupted fp16 run resumes exactly (the scaler's state is in
last.npz); and the precision flags' checks."""
import json

import numpy as np
import pytest
from conftest import final_weights, interrupt_at, records, requires_gpu, tiny_fit, without_timing, write_pairs_corpus

from train.__main__ import main
from train.data.demo_corpus import write_demo_corpus
from train.loop import step

# The margin the fp16 run's validation loss must be within, relative to the float32 run's (after 30 steps the two
# differ by about 0.05%: float16 rounding is far below the noise of training)
MARGIN = 0.01
HIGH_SCALE = 2.0 ** 24   # a start that overflows the float16 gradients, to make the scaler back off


def epochs(run_dir):
    return [r for r in records(run_dir) if r["kind"] == "epoch"]


@pytest.mark.slow
@requires_gpu
def test_the_demo_preset_in_fp16_reaches_the_float32_validation_loss(tmp_path, monkeypatch):
    monkeypatch.setattr(step, "INIT_SCALE", HIGH_SCALE)
    corpus = write_demo_corpus(tmp_path / "demo")
    common = ["fit", "--preset", "demo", "--data-dir", str(corpus), "--device", "cuda", "--max-steps", "30",
              "--batch-tokens", "1024"]
    assert main([*common, "--run-dir", str(tmp_path / "fp32")]) == 0
    assert main([*common, "--run-dir", str(tmp_path / "fp16"), "--precision", "fp16"]) == 0
    fp32, fp16 = epochs(tmp_path / "fp32")[-1], epochs(tmp_path / "fp16")[-1]
    assert fp32["step"] == fp16["step"] == 30
    assert abs(fp16["val_loss"] - fp32["val_loss"]) <= MARGIN * fp32["val_loss"], (fp16["val_loss"],
                                                                                    fp32["val_loss"])
    trained = [r for r in records(tmp_path / "fp16") if r["kind"] == "train"]
    overflows = fp16["overflow_batches"]
    assert overflows >= 1 and trained[-1]["overflows"] == overflows
    # each overflow halved the scale (no 2000 clean steps in a row to double it)
    assert trained[-1]["loss_scale"] == HIGH_SCALE / 2 ** overflows
    assert "loss_scale" not in records(tmp_path / "fp32")[0]
    config = json.loads((tmp_path / "fp16" / "config.json").read_text())
    assert config["settings"]["precision"] == "fp16"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return write_pairs_corpus(tmp_path_factory.mktemp("corpus"))


@requires_gpu
def test_an_fp16_run_resumes_exactly_with_its_loss_scale(corpus, tmp_path, monkeypatch):
    """Stopped after step 5 and resumed, the run equals an uninterrupted one bit for bit: weights, metrics, and the
    scale (which dropped in the first steps: a resumed run that started again from 2^24 would overflow again)."""
    monkeypatch.setattr(step, "INIT_SCALE", HIGH_SCALE)
    settings = ["--batch-tokens", "64", "--max-steps", "10", "--device", "cuda", "--precision", "fp16"]
    straight, stopped = tmp_path / "straight", tmp_path / "stopped"
    assert main(tiny_fit(corpus, straight, *settings)) == 0
    with monkeypatch.context() as m:
        interrupt_at(m, 5, "stop-file")
        assert main(tiny_fit(corpus, stopped, *settings)) == 130
    import minitorch as mt
    saved = mt.load(stopped / "last.npz")
    assert saved["progress"]["step"] == 5 and saved["scaler"]["scale"] < HIGH_SCALE
    assert saved["progress"]["overflows"] >= 1
    assert main(tiny_fit(corpus, stopped, "--resume", "--device", "cuda", "--max-steps", "10")) == 0
    assert without_timing(records(stopped)) == without_timing(records(straight))
    a, b = final_weights(straight), final_weights(stopped)
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
    assert mt.load(stopped / "last.npz")["scaler"] == mt.load(straight / "last.npz")["scaler"]


def test_tf32_is_refused_off_the_gpu(corpus, tmp_path, capsys):
    assert main(tiny_fit(corpus, tmp_path / "run", "--tf32")) == 2
    assert "--tf32 changes how a GPU multiplies float32 matrices; pass --device cuda" in capsys.readouterr().err


def test_a_resumed_run_keeps_its_precision(corpus, tmp_path, capsys):
    run_dir = tmp_path / "run"
    assert main(tiny_fit(corpus, run_dir, "--batch-tokens", "64", "--max-steps", "2")) == 0
    capsys.readouterr()
    assert main(tiny_fit(corpus, run_dir, "--resume", "--max-steps", "3", "--precision", "fp16")) == 1
    assert "--resume: --precision fp16 differs from the run's fp32" in capsys.readouterr().err
