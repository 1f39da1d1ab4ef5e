"""Issue 22's regularisers: BPE-dropout (fit --bpe-dropout: training pairs re-segmented each epoch, validation
deterministic, resume exact) and R-Drop (fit --rdrop: the loss against a NumPy computation, its gradient against
central differences in float64, alone and through a model)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import (fit_argv, final_weights, interrupt_at, make_corpus, records, requires_gpu,
                      requires_standin, tiny_fit, without_timing)
from model_gradcheck import finite_difference_check
from mpi_runner import REPO, mpi_env, mpirun, requires_mpi

import minitorch as mt
from train.loop.trainer import Trainer
from train.__main__ import main
from train.loop.rdrop import RDropStep, composed_symmetric_kl, rdrop_loss, symmetric_kl, twice
from train.loop.step import TrainStep
from train.data.bpe_dropout import BPEDropout
from train.data.tokenizer import PAD_ID, train_tokenizer
from transformer import ModelConfig, Transformer

LINES = ["the red cat sleeps on the warm mat .", "a small dog runs home through the park .",
         "two old men read books in the garden .", "the bird sings loudly in the morning ."] * 20


# ----- BPE-dropout -----
def test_bpe_dropout_is_seeded_spells_the_same_text_and_at_alpha_0_is_sentencepieces_bpe(tmp_path):
    tok, _ = train_tokenizer(LINES + [x.upper() for x in LINES], tmp_path / "spm.model", 120)
    plain = tok.encode(LINES)
    bpe = BPEDropout(tok)
    assert bpe(plain, 0.0, 0, 0) == plain                  # no merge dropped: SentencePiece's own segmentation
    first = bpe(plain, 0.3, 7, 0)
    assert first == bpe(plain, 0.3, 7, 0)                  # (seed, epoch) decide the draw
    assert first != bpe(plain, 0.3, 7, 1) and first != bpe(plain, 0.3, 8, 0) and first != plain
    assert tok.decode(first) == tok.decode(plain)           # another segmentation of the same text
    assert sum(map(len, first)) > sum(map(len, plain))     # merges left out: more, shorter pieces
    # the same in another process: no hidden per-process entropy (SentencePiece's own sampling has some)
    code = ("import json, sys; from train.data.tokenizer import Tokenizer; "
            "from train.data.bpe_dropout import BPEDropout; "
            "t = Tokenizer(sys.argv[1]); print(json.dumps(BPEDropout(t)(json.loads(sys.argv[2]), 0.3, 7, 0)))")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "spm.model"), json.dumps(plain)], cwd=REPO,
                         capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == first


def test_bpe_dropout_on_multi30k_at_alpha_0_is_sentencepieces_segmentation_of_every_sentence(tmp_path):
    """The merge rule (the highest-scored joined piece, wherever it occurs) is SentencePiece's, on real text."""
    from train.data import corpus
    folder = os.environ.get("MINITORCH_DATA")
    if not folder or not corpus.has_splits(Path(folder) / "multi30k", "de", "en", ("train",)):
        pytest.skip("Multi30k not in $MINITORCH_DATA/multi30k")
    de, en = corpus.read_parallel(Path(folder) / "multi30k", "train", "de", "en")
    tok, _ = train_tokenizer(de[:3000] + en[:3000], tmp_path / "spm.model", 2000)
    ids = tok.encode(de[:3000] + en[:3000])
    assert BPEDropout(tok)(ids, 0.0, 0, 0) == ids


def trainer_of(tmp_path, monkeypatch, *flags):
    seen = {}
    original = Trainer.fit
    monkeypatch.setattr(Trainer, "fit", lambda self: seen.update(trainer=self) or original(self))
    data = make_corpus(tmp_path / "corpus", train_src=LINES, train_tgt=[" ".join(x.split()[::-1]) for x in LINES])
    assert main(fit_argv(data, tmp_path / "run", "--vocab-size", "120", "--max-steps", "1", *flags)) == 0
    return seen["trainer"]


def test_bpe_dropout_resegments_the_training_pairs_each_epoch_only(tmp_path, monkeypatch):
    t = trainer_of(tmp_path, monkeypatch, "--bpe-dropout", "0.3")
    assert json.loads((tmp_path / "run" / "config.json").read_text())["settings"]["bpe_dropout"] == 0.3
    e0 = [list(map(list, side)) for side in t.training_pairs.of_epoch(0)]
    e1 = t.training_pairs.of_epoch(1)
    assert e0 != [list(map(list, side)) for side in e1]
    t.training_pairs.sampled = None                                        # drawn again: the same
    assert [list(map(list, side)) for side in t.training_pairs.of_epoch(0)] == e0
    assert e0 != [t.training_pairs.src, t.training_pairs.tgt]                 # the deterministic segmentation
    assert t.tok.decode(e0[0]) == t.tok.decode(t.training_pairs.src)
    # validation keeps the one segmentation
    val = t.validation
    assert val.pairs[0] == t.tok.encode(val.src) and val.bleu_ids == t.tok.encode(val.src)
    assert len(t.batches(0)) and isinstance(t.step_fn, TrainStep) and not isinstance(t.step_fn, RDropStep)


def test_without_bpe_dropout_every_epoch_has_the_one_segmentation(tmp_path, monkeypatch):
    t = trainer_of(tmp_path, monkeypatch)
    assert t.training_pairs.of_epoch(0) == t.training_pairs.of_epoch(3) == (t.training_pairs.src, t.training_pairs.tgt)


def test_resume_with_bpe_dropout_and_rdrop_gives_the_uninterrupted_run(tiny_corpus, tmp_path, monkeypatch):
    settings = ["--batch-tokens", "64", "--epochs", "2", "--bpe-dropout", "0.2", "--rdrop", "0.5", "--save-every",
                "20"]
    straight = tmp_path / "straight"
    assert main(tiny_fit(tiny_corpus, straight, *settings)) == 0
    stopped = tmp_path / "stopped"
    with monkeypatch.context() as m:
        interrupt_at(m, 35, "ctrl-c")   # in the second epoch
        assert main(tiny_fit(tiny_corpus, stopped, *settings)) == 130
    assert main(tiny_fit(tiny_corpus, stopped, "--resume")) == 0
    assert without_timing(records(stopped)) == without_timing(records(straight))
    a, b = final_weights(straight), final_weights(stopped)
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


# ----- R-Drop -----
def log_softmax(x):
    x = x - x.max(axis=-1, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=-1, keepdims=True))


def reference_loss(z, tgt_out, eps, alpha):
    """R-Drop's loss in NumPy: (CE_1 + CE_2 + alpha sum_t 1/2 (KL(p1||p2) + KL(p2||p1))) / 2n, z (2B, T, V)."""
    B, V = z.shape[0] // 2, z.shape[-1]
    lp = log_softmax(z)
    real = tgt_out != PAD_ID
    q = np.full(z.shape, eps / V)
    q[np.arange(2 * B)[:, None], np.arange(z.shape[1])[None], tgt_out] += 1 - eps
    ce = (-(q * lp).sum(-1) * real).sum()
    p1, p2, l1, l2 = np.exp(lp[:B]), np.exp(lp[B:]), lp[:B], lp[B:]
    kl12, kl21 = (p1 * (l1 - l2)).sum(-1), (p2 * (l2 - l1)).sum(-1)
    n = real[:B].sum()
    return (ce + alpha * (0.5 * (kl12 + kl21) * real[:B]).sum()) / (2 * n)


def batch(rng, B=3, T=4, V=7):
    tgt = rng.integers(4, V, size=(B, T))
    tgt[1, 2:] = PAD_ID
    tgt[2, 3:] = PAD_ID
    return np.concatenate([tgt, tgt]), rng.standard_normal((2 * B, T, V))


@pytest.mark.parametrize("alpha, eps", [(0.0, 0.1), (1.0, 0.0), (5.0, 0.1)])
def test_the_rdrop_loss_is_the_papers_composition(alpha, eps):
    rng = np.random.default_rng(0)
    tgt_out, z = batch(rng)
    got = rdrop_loss(mt.tensor(z, dtype=np.float64), tgt_out, eps, alpha).item()
    assert got == pytest.approx(reference_loss(z, tgt_out, eps, alpha), rel=1e-12)


def test_the_kl_term_is_zero_for_equal_passes_and_ignores_padding():
    rng = np.random.default_rng(1)
    tgt_out, z = batch(rng)
    z[3:] = z[:3]
    assert symmetric_kl(mt.tensor(z, dtype=np.float64), tgt_out).item() == pytest.approx(0.0, abs=1e-15)
    tgt_out, z = batch(rng)
    z2 = z.copy()
    z2[1, 2:] += 5.0   # only padded positions of sentence 1 (pass 1) change
    z2[4, 2:] -= 3.0
    a, b = (symmetric_kl(mt.tensor(x, dtype=np.float64), tgt_out).item() for x in (z, z2))
    assert a == pytest.approx(b, rel=1e-13)


def test_the_rdrop_gradient_matches_central_differences_and_the_derivation():
    rng = np.random.default_rng(2)
    tgt_out, z = batch(rng)
    alpha, eps = 2.0, 0.1
    x = mt.tensor(z, dtype=np.float64, requires_grad=True)
    rdrop_loss(x, tgt_out, eps, alpha).backward()
    grad = x.grad.numpy()
    numeric = np.zeros_like(z)
    h = 1e-6
    for i in np.ndindex(z.shape):
        up, down = z.copy(), z.copy()
        up[i] += h
        down[i] -= h
        numeric[i] = (reference_loss(up, tgt_out, eps, alpha) - reference_loss(down, tgt_out, eps, alpha)) / (2 * h)
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-9)
    # the docstring's derivation of the KL part: d/dz1 = p1 (l1 - l2) + p1 - p2 - p1 KL(p1||p2), over 2n
    y = mt.tensor(z, dtype=np.float64, requires_grad=True)
    symmetric_kl(y, tgt_out).backward()
    B = z.shape[0] // 2
    lp = log_softmax(z)
    p1, p2, l1, l2 = np.exp(lp[:B]), np.exp(lp[B:]), lp[:B], lp[B:]
    kl12 = (p1 * (l1 - l2)).sum(-1, keepdims=True)
    expected = 0.5 * (p1 * (l1 - l2) + p1 - p2 - p1 * kl12) * (tgt_out[:B] != PAD_ID)[..., None]
    np.testing.assert_allclose(y.grad.numpy()[:B], expected, rtol=1e-9, atol=1e-12)


def test_the_fused_kl_term_equals_its_composition_from_engine_ops_value_and_gradient():
    rng = np.random.default_rng(5)
    tgt_out, z = batch(rng)
    real = (tgt_out[:3] != PAD_ID).astype(np.float64)
    g = rng.standard_normal()
    grads = []
    for f in (lambda x: symmetric_kl(x, tgt_out), lambda x: composed_symmetric_kl(x, real)):
        x = mt.tensor(z, dtype=np.float64, requires_grad=True)
        value = f(x)
        (value * g).backward()
        grads.append((value.item(), x.grad.numpy()))
    assert grads[0][0] == pytest.approx(grads[1][0], rel=1e-12)
    np.testing.assert_allclose(grads[0][1], grads[1][1], rtol=1e-10, atol=1e-14)
    # second order goes through the composition: d/dz of (d s / d z . v) exists and matches it
    x = mt.tensor(z, dtype=np.float64, requires_grad=True)
    (first,) = mt.grad(symmetric_kl(x, tgt_out), [x], create_graph=True)
    v = rng.standard_normal(z.shape)
    (second,) = mt.grad((first * mt.tensor(v)).sum(), [x])
    y = mt.tensor(z, dtype=np.float64, requires_grad=True)
    (first_c,) = mt.grad(composed_symmetric_kl(y, real), [y], create_graph=True)
    (second_c,) = mt.grad((first_c * mt.tensor(v)).sum(), [y])
    np.testing.assert_allclose(second.numpy(), second_c.numpy(), rtol=1e-9, atol=1e-12)


def test_rdrop_through_a_model_with_dropout_matches_central_differences_in_float64():
    """The step's loss composition: the batch twice in one forward (independent masks, the same masks on every
    evaluation by reseeding), label smoothing and the KL term; every parameter against central differences."""
    mt.manual_seed(0)
    model = Transformer(ModelConfig(vocab_size=9, d_model=4, n_heads=2, d_ff=8, n_encoder_layers=1,
                                    n_decoder_layers=1, dropout=0.3, max_len=16))
    for p in model.parameters():
        p.data = p.data.astype(np.float64)
    model.train()
    rng = np.random.default_rng(3)
    src = rng.integers(4, 9, size=(2, 4))
    tgt = rng.integers(4, 9, size=(2, 3))
    tgt[1, 2] = PAD_ID
    tgt_in = np.concatenate([np.full((2, 1), 2), tgt[:, :-1]], 1)
    step = RDropStep(model, None, None, 0.1, 1.0, "cpu", alpha=3.0)

    def loss_fn():
        mt.manual_seed(11)
        return step.forward((src, tgt_in, tgt))

    mt.manual_seed(11)
    with mt.no_grad():
        logits = model(*twice((src, tgt_in))[:2]).numpy()
    assert not np.allclose(logits[:2], logits[2:])   # two different dropout masks: the KL term is not zero
    assert loss_fn().item() == pytest.approx(reference_loss(logits, np.concatenate([tgt, tgt]), 0.1, 3.0), rel=1e-10)
    assert finite_difference_check(model, loss_fn, rng) >= 3 * len(list(model.parameters())) - 2


def test_fit_rdrop_uses_the_rdrop_step_and_records_it(tmp_path, monkeypatch):
    t = trainer_of(tmp_path, monkeypatch, "--rdrop", "0.7")
    assert isinstance(t.step_fn, RDropStep) and t.step_fn.alpha == 0.7
    assert json.loads((tmp_path / "run" / "config.json").read_text())["settings"]["rdrop"] == 0.7


@requires_gpu
@requires_standin
def test_an_rdrop_and_bpe_dropout_step_on_cuda_reads_the_device_once(tiny_corpus, tmp_path, monkeypatch):
    import cupy
    per_step, original = [], Trainer.train_step

    def counted(self, *args, **kwargs):
        start = len(cupy._standin.SYNCS)
        done = original(self, *args, **kwargs)
        per_step.append(cupy._standin.SYNCS[start:])
        return done
    monkeypatch.setattr(Trainer, "train_step", counted)
    assert main(tiny_fit(tiny_corpus, tmp_path / "run", "--batch-tokens", "96", "--max-steps", "3", "--rdrop", "1.0",
                         "--bpe-dropout", "0.1", "--device", "cuda")) == 0
    assert len(per_step) == 3 and all(len(step) == 1 for step in per_step), per_step
    assert all("train/loop/step.py:" in where for step in per_step for _, where in step)


@requires_mpi
@pytest.mark.slow
def test_two_ranks_with_the_issue_22_flags_train_like_one_process(tiny_corpus, tmp_path):
    """Every rank draws the epoch's BPE-dropout segmentation and chooses the held-back slice as one process does,
    and R-Drop's loss of a share is its sum over the whole batch's tokens: the losses agree to float32 rounding (no
    dropout, so that the ranks' masks do not differ from one process's)."""
    one, two = tmp_path / "one", tmp_path / "two"
    common = ["fit", "--preset", "tiny", "--data-dir", str(tiny_corpus), "--src", "xs", "--tgt", "xt",
              "--vocab-size", "200", "--batch-tokens", "96", "--epochs", "2", "--max-steps", "24", "--dropout", "0",
              "--bpe-dropout", "0.2", "--rdrop", "1.0", "--held-back", "5"]
    for run_dir, cmd in ((two, mpirun(2, ["-m", "train", *common, "--run-dir", str(two), "--distributed"],
                                      cwd=tmp_path)),
                         (one, subprocess.run([sys.executable, "-m", "train", *common, "--run-dir", str(one)],
                                              cwd=REPO, env=mpi_env(), capture_output=True, text=True, timeout=240))):
        assert cmd.returncode == 0, cmd.stderr
    losses = [[r["loss"] for r in records(d) if r["kind"] == "train"] for d in (one, two)]
    assert len(losses[0]) >= 2
    np.testing.assert_allclose(losses[1], losses[0], rtol=2e-6)
    held = [[r["held_nll"] for r in records(d) if r["kind"] == "epoch"] for d in (one, two)]
    np.testing.assert_allclose(held[1], held[0], rtol=1e-5)
    assert (one / "held_back.tsv").read_text() == (two / "held_back.tsv").read_text()
