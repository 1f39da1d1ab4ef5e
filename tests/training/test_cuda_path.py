"""The GPU path end to end: every `python -m train` command on --device cuda, exact resume there, checkpoints that move
between devices, and the host-synchronisation budget (one device read per training step, one per decoded token step).

In CI these run on the CuPy stand-in (tests/cupy_standin), which logs every host synchronisation with the line that
caused it; with a real GPU they run on it, and the sync counts, which only the stand-in records, are skipped.
"""
import collections
import io
import json

import numpy as np
import pytest
from conftest import requires_gpu, requires_standin, write_pairs_corpus
from conftest import final_weights, interrupt_at, records, tiny_fit, without_timing

import minitorch as mt
from minitorch import backend, distributed, nn
from train.commands import bench
from train.loop.trainer import Trainer
from train.data.batching import training_batch
from train.__main__ import main
from train.run.presets import PRESETS
from transformer import ModelConfig, Transformer, beam_search, greedy_decode

pytestmark = [requires_gpu, pytest.mark.gpu]

MODELS = {"transformer": [], "lstm": ["--model", "lstm"], "lstm-attn": ["--model", "lstm-attn"]}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return write_pairs_corpus(tmp_path_factory.mktemp("corpus"))


def sync_log():
    import cupy
    return cupy._standin.SYNCS


def count_step_syncs(monkeypatch):
    """Wrap Trainer.train_step: the list it returns gets each step's host synchronisations (kind, where)."""
    per_step, original = [], Trainer.train_step

    def counted(self, *args, **kwargs):
        log = sync_log()
        start = len(log)
        done = original(self, *args, **kwargs)
        per_step.append(log[start:])
        return done
    monkeypatch.setattr(Trainer, "train_step", counted)
    return per_step


def summary(per_step):
    return collections.Counter(w for step in per_step for w in step).most_common(5)


# ----- every command on cuda -----
@pytest.mark.slow
@pytest.mark.parametrize("kind", list(MODELS))
def test_fit_evaluate_translate_plot_on_cuda(kind, corpus, tmp_path, monkeypatch, capsys):
    run_dir = tmp_path / kind
    assert main(tiny_fit(corpus, run_dir, *MODELS[kind], "--batch-tokens", "96", "--max-steps", "4",
                         "--device", "cuda")) == 0
    assert main(["evaluate", "--run-dir", str(run_dir), "--beam", "2", "--device", "cuda", "--checkpoint",
                 "last"]) == 0
    assert "case:lc" in capsys.readouterr().out
    monkeypatch.setattr("sys.stdin", io.StringIO("the red cat sleeps .\n\ntwo old men read books .\n"))
    assert main(["translate", "--run-dir", str(run_dir), "--beam", "2", "--device", "cuda", "--checkpoint",
                 "last"]) == 0
    assert len(capsys.readouterr().out.split("\n")) == 4   # one line out per line in
    assert main(["plot", "--run-dir", str(run_dir), "--checkpoint", "last"]) == 0   # a cuda run, plotted
    assert (run_dir / "curves.png").is_file()


@requires_standin
@pytest.mark.parametrize("precision", ["fp32", "fp16"])
@pytest.mark.parametrize("kind", list(MODELS))
def test_a_training_step_reads_the_device_once(kind, precision, corpus, tmp_path, monkeypatch):
    """In float32 and in fp16, whose GradScaler learns of an overflow from the norm that the one read brings."""
    per_step = count_step_syncs(monkeypatch)
    assert main(tiny_fit(corpus, tmp_path / "run", *MODELS[kind], "--batch-tokens", "96", "--max-steps", "3",
                         "--device", "cuda", "--precision", precision)) == 0
    assert len(per_step) == 3
    assert all(len(step) == 1 for step in per_step), summary(per_step)
    assert all(where.endswith(("train/loop/step.py:" + where.rsplit(":", 1)[1])) for step in per_step
               for _, where in step), summary(per_step)


@requires_standin
def test_the_bench_step_reads_the_device_once():
    preset = PRESETS["tiny"]
    src, tgt = bench.synthetic_batch(4, 6, preset.vocab_size, 0)
    step = bench.BenchStep(preset, bench.build_model(preset, "cuda", 0), training_batch(src, tgt), "cuda")
    log = sync_log()
    for _ in range(3):
        start = len(log)
        loss, marks = step()
        assert len(log) - start == 1 and np.isfinite(loss) and len(marks) == 5


def test_bench_train_and_decode_on_cuda(capsys):
    assert main(["bench", "--preset", "tiny", "--steps", "1", "--warmup-steps", "0", "--batch-size", "4",
                 "--seq-len", "6", "--device", "cuda", "--json"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["device"] == "cuda" and result["tokens_per_s"] > 0
    assert main(["bench", "--preset", "tiny", "--mode", "decode", "--batch-size", "2", "--seq-len", "6", "--steps",
                 "1", "--device", "cuda", "--json"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["device"] == "cuda" and result["greedy"]["output_tokens_per_s"] > 0


@pytest.mark.slow
def test_the_experiments_on_cuda(corpus, tmp_path, capsys):
    training = ["--preset", "tiny", "--src", "xs", "--tgt", "xt", "--vocab-size", "120", "--batch-tokens", "96",
                "--data-dir", str(corpus), "--device", "cuda"]
    assert main(["experiment", "memory", "--out", str(tmp_path / "memory"), "--lengths", "8,16", "--models",
                 "transformer,lstm", "--preset", "tiny", "--batch-size", "2", "--device", "cuda"]) == 0
    assert main(["experiment", "depth", "--out", str(tmp_path / "depth"), *training, "--layers", "1",
                 "--max-steps", "2"]) == 0
    assert main(["experiment", "compare", "--out", str(tmp_path / "compare"), *training, "--max-steps", "1",
                 "--beam", "2"]) == 0
    assert main(["experiment", "gradient-path", "--out", str(tmp_path / "gradient"), "--runs",
                 str(tmp_path / "compare" / "runs"), "--length", "12", "--windows", "2", "--directions", "1",
                 "--device", "cuda"]) == 0
    depth = json.loads((tmp_path / "depth" / "depth.json").read_text())
    assert all(len(r["loss"]) == 2 and all(np.isfinite(r["loss"])) for r in depth["runs"])
    assert len(json.loads((tmp_path / "compare" / "compare.json").read_text())["models"]) == 3


class TwinWorld(distributed.World):
    """Two ranks whose gradients are equal, as seen from rank 0: every sum doubles its input."""
    size = 2

    def allreduce_sum_(self, array):
        array *= 2
        return array


@requires_standin
def test_gradient_sums_on_device_arrays_read_nothing_back(syncs):
    mt.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2)).to("cuda")
    loss = (model(mt.randn(5, 3, device="cuda")) ** 2).mean()
    loss.backward()
    before = [p.grad.numpy() for p in model.parameters()]
    syncs.clear()
    extras = distributed.GradientSync(model.parameters(), TwinWorld())([loss.data, 1.0])
    assert syncs == [] and type(extras).__module__.startswith("cupy")
    np.testing.assert_allclose(backend.to_numpy(extras), [2 * loss.item(), 2.0], rtol=1e-6)
    for p, g in zip(model.parameters(), before):
        np.testing.assert_array_equal(p.grad.numpy(), 2 * g)


# ----- exact resume and checkpoints across devices -----
@pytest.mark.slow
def test_resume_on_cuda_equals_an_uninterrupted_run_bit_for_bit(corpus, tmp_path, monkeypatch):
    settings = ["--batch-tokens", "64", "--epochs", "1", "--dropout", "0.1", "--device", "cuda"]
    straight, stopped = tmp_path / "straight", tmp_path / "stopped"
    assert main(tiny_fit(corpus, straight, *settings)) == 0
    with monkeypatch.context() as m:
        interrupt_at(m, 7, "stop-file")
        assert main(tiny_fit(corpus, stopped, *settings)) == 130
    saved = mt.load(stopped / "last.npz")
    assert saved["progress"]["step"] == 7 and saved["rng"]["cuda"].dtype == np.uint8   # the GPU's dropout stream
    assert main(tiny_fit(corpus, stopped, "--resume", "--device", "cuda")) == 0
    assert without_timing(records(stopped)) == without_timing(records(straight))
    a, b = final_weights(straight), final_weights(stopped)
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def test_a_run_moves_from_cuda_to_cpu_and_back_saying_what_is_not_exact(corpus, tmp_path, capsys):
    run_dir = tmp_path / "run"
    base = tiny_fit(corpus, run_dir, "--batch-tokens", "96", "--dropout", "0.1")
    assert main(base + ["--max-steps", "2", "--device", "cuda"]) == 0
    capsys.readouterr()
    assert main(base[:-4] + ["--resume", "--max-steps", "4", "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "note: the run was trained on cuda and continues on cpu" in out
    assert mt.load(run_dir / "last.npz")["progress"]["step"] == 4
    assert main(base[:-4] + ["--resume", "--max-steps", "6", "--device", "cuda"]) == 0
    out = capsys.readouterr().out
    assert "note: the checkpoint holds no random state for cuda (trained on another device)" in out
    cpu = {k: v.numpy() for k, v in mt.load(run_dir / "last.npz")["model"].items()}
    on_gpu = mt.load(run_dir / "last.npz", device="cuda")["model"]
    assert all(t.device == "cuda" and np.array_equal(t.numpy(), cpu[k]) for k, t in on_gpu.items())


# ----- decoding: one device read per generated token step -----
@requires_standin
@pytest.mark.parametrize("search", ["greedy", "beam"])
def test_decoding_reads_the_device_once_per_token_step(search):
    mt.manual_seed(0)
    config = ModelConfig(vocab_size=30, d_model=16, n_heads=2, d_ff=32, n_encoder_layers=1, n_decoder_layers=1,
                         max_len=64)
    model = Transformer(config).to("cuda")
    src = np.array([[5, 6, 7, 8, 3], [9, 10, 3, 0, 0]])
    token_steps = []
    decode_step = model.decode_step
    model.decode_step = lambda *a, **k: token_steps.append(1) or decode_step(*a, **k)
    log = sync_log()
    start = len(log)
    greedy_decode(model, src) if search == "greedy" else beam_search(model, src, beam_size=3)
    assert len(token_steps) >= 2 and len(log) - start <= len(token_steps), collections.Counter(log[start:])
    assert all("transformer/decoding.py" in where for _, where in log[start:])


# ----- the user's GPU check -----
@pytest.mark.parametrize("error, names", [
    (RuntimeError("CuPy failed to load libnvrtc.so.12: OSError: libnvrtc.so.12: cannot open shared object file"),
     "CuPy could not load NVRTC, the compiler CuPy builds its kernels with (RuntimeError: CuPy failed to load "
     "libnvrtc.so.12"),
    (ImportError("libcublas.so.12: cannot open shared object file"), "CuPy could not load cuBLAS, for matrix products"),
    (OSError("Failure finding \"libcurand.so.10\""), "CuPy could not load cuRAND, for random numbers (dropout)"),
    (Exception("catastrophic error: cannot open source file \"cuda_fp16.h\""), "CuPy could not load the CUDA headers"),
])
def test_check_gpu_names_the_cuda_library_cupy_could_not_load(capsys, monkeypatch, error, names):
    def fail(*args):
        raise error
    monkeypatch.setattr(backend, "to_device", fail)
    assert main(["check-gpu", "--preset", "tiny", "--steps", "1", "--warmup-steps", "0"]) == 1
    err = capsys.readouterr().err
    assert names in err and "pip install -e '.[gpu-cuda" in err, err
    assert len(err.strip().splitlines()) == 1, err


def test_check_gpu_names_the_device_and_times_a_few_steps(capsys):
    assert main(["check-gpu", "--preset", "tiny", "--steps", "1", "--warmup-steps", "0"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("GPU: ") and "CuPy " in out and "CUDA runtime " in out
    assert "matrix product on the GPU: matches NumPy" in out and "target tokens/s" in out
    assert out.rstrip().endswith("pass --device cuda to fit, evaluate, translate and bench")


@pytest.mark.parametrize("flags, named", [([], "fp32"), (["--precision", "fp16"], "fp16 (mixed, loss scaling)"),
                                          (["--tf32"], "fp32 (tf32 products)")])
def test_check_gpu_and_bench_name_the_precision_that_ran(flags, named, capsys):
    from minitorch import backend
    try:
        assert main(["check-gpu", "--preset", "tiny", "--steps", "1", "--warmup-steps", "0", *flags]) == 0
        assert f"training in {named}, preset tiny" in capsys.readouterr().out
        assert main(["bench", "--preset", "tiny", "--steps", "1", "--warmup-steps", "0", "--batch-size", "4",
                     "--seq-len", "6", "--device", "cuda", "--json", *flags]) == 0
        result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        assert result["precision"] == named
    finally:
        backend.set_tf32(False)
