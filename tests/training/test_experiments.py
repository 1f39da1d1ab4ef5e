"""The experiment commands on tiny settings (compare, gradient-path, memory, depth), their fitting and judging
helpers, and fit --model lstm / lstm-attn through evaluate, translate and plot."""
import io
import json
import math

import numpy as np
import pytest
from conftest import write_pairs_corpus
from hypothesis import given, settings
from hypothesis import strategies as st

import minitorch as mt
import minitorch.functional as F
from train.run import run_folder
from train.run.config import read_config
from train.__main__ import main
from train.commands.experiments import depth, gradient_path, memory
from train.loop.step import make_optimizer
from train.run.presets import PRESETS

TRAINING = ["--preset", "tiny", "--src", "xs", "--tgt", "xt", "--vocab-size", "120", "--batch-tokens", "96"]


@pytest.fixture(scope="module")
def tiny_corpus(tmp_path_factory):
    """PAIRS (conftest), repeated 20 times in train; val and test hold them once."""
    return write_pairs_corpus(tmp_path_factory.mktemp("corpus"), train_copies=20)


def read_json(path):
    return json.loads(path.read_text())


# ----- memory -----
@settings(max_examples=50)
@given(st.floats(0.5, 3.0), st.floats(1.0, 1e6), st.lists(st.integers(2, 4096), min_size=2, max_size=8, unique=True))
def test_growth_exponent_of_a_power_law_is_its_power(k, c, lengths):
    values = [c * n ** k for n in lengths]
    assert memory.growth_exponent(lengths, values) == pytest.approx(k, abs=1e-6)
    assert memory.local_exponents(sorted(lengths), [c * n ** k for n in sorted(lengths)]) == \
        pytest.approx([k] * (len(lengths) - 1), abs=1e-6)


def test_growth_exponent_fits_the_long_lengths_where_the_fastest_term_dominates():
    lengths = [16, 32, 64, 128, 256, 512, 1024, 2048]
    quadratic_plus_linear = [1e4 + 50.0 * n + n ** 2 for n in lengths]   # n^2 overtakes 50 n at n = 50
    linear_plus_constant = [1e4 + 100.0 * n for n in lengths]
    assert 1.8 < memory.growth_exponent(lengths, quadratic_plus_linear) < 2.0
    assert memory.growth_exponent(lengths, quadratic_plus_linear) > \
        memory.growth_exponent(lengths[:4], quadratic_plus_linear[:4]) + 0.5
    assert 0.0 < memory.growth_exponent(lengths, linear_plus_constant) < 1.0


@settings(max_examples=30)
@given(st.floats(0, 1e6), st.floats(0, 1e4), st.floats(0, 1e3))
def test_quadratic_fit_recovers_the_coefficients(a, b, c):
    lengths = [16, 32, 64, 128, 256]
    fit = memory.quadratic_fit(lengths, [a + b * n + c * n * n for n in lengths])
    assert [fit["a"], fit["b"], fit["c"]] == pytest.approx([a, b, c], rel=1e-6, abs=1e-3)
    total = a + b * 256 + c * 256 ** 2
    if total > 0:
        assert fit["share_at_longest"] == pytest.approx(c * 256 ** 2 / total, abs=1e-6)
    else:
        assert math.isnan(fit["share_at_longest"])


def quadratic_coefficient(lengths, values):
    """c of a + b n + c n^2 through three equally spaced lengths (a second difference)."""
    (n0, n1, n2), (v0, v1, v2) = lengths, values
    h = n1 - n0
    assert n2 - n1 == h
    return (v2 - 2 * v1 + v0) / (2 * h * h)


@pytest.mark.slow
def test_memory_experiment_transformer_keeps_its_attention_weights_lstm_grows_linearly(tmp_path, capsys):
    out, lengths, batch = tmp_path / "memory", [8, 16, 24], 2
    assert main(["experiment", "memory", "--out", str(out), "--lengths", ",".join(map(str, lengths)), "--models",
                 "transformer,lstm", "--preset", "tiny", "--batch-size", str(batch)]) == 0
    assert "| k (saved) |" in capsys.readouterr().out
    assert {"memory.md", "memory.json", "memory.png"} <= {p.name for p in out.iterdir()}
    data = read_json(out / "memory.json")
    assert data["lengths"] == lengths
    for kind, d in data["models"].items():
        saved = [p["saved_bytes"] for p in d["points"]]
        peak = [p["peak_bytes"] for p in d["points"]]
        assert all(0 < a < b for a, b in zip(saved, saved[1:])) and all(0 < a < b for a, b in zip(peak, peak[1:]))
        assert math.isfinite(d["exponent_saved"]) and math.isfinite(d["exponent_peak"])
    # the fused attention keeps its weights for backward (op.kept): one float32 (n x n) per head and sentence in each
    # attention block (encoder self, decoder self and cross); beside them the Transformer's n^2 term holds only bool
    # masks, at most a byte for four of the weights' here; an LSTM has no n^2 term
    cfg = PRESETS["tiny"].model
    blocks = cfg["n_encoder_layers"] + 2 * cfg["n_decoder_layers"]
    transformer = [p["saved_bytes"] for p in data["models"]["transformer"]["points"]]
    lstm = [p["saved_bytes"] for p in data["models"]["lstm"]["points"]]
    weights = 4 * batch * cfg["n_heads"] * blocks
    assert weights <= quadratic_coefficient(lengths, transformer) < weights * 5 / 4
    assert abs(quadratic_coefficient(lengths, lstm)) * lengths[-1] ** 2 < 0.01 * lstm[-1]
    reported = data["models"]["transformer"]["quadratic_fit_saved"]
    assert reported["c"] == pytest.approx(quadratic_coefficient(lengths, transformer), rel=1e-4)


def test_memory_experiment_needs_two_lengths(tmp_path, capsys):
    assert main(["experiment", "memory", "--out", str(tmp_path), "--lengths", "16"]) == 1
    assert "at least two lengths" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["experiment", "memory", "--models", "transformer,gru"])
    assert "expected a comma-separated list of transformer, lstm, lstm-attn" in capsys.readouterr().err


# ----- depth -----
def test_depths_schedules_with_and_without_the_warmup_ramp():
    """Experiment depth's two schedules, as fit's update builds them (make_update(..., ramp=...))."""
    peak, warmup = 2e-3, 10

    def lrs(ramp):   # the learning rate of steps 1..40
        optimizer, schedule = make_optimizer([mt.zeros(2, requires_grad=True)], peak, warmup, 64, ramp=ramp)
        out = []
        for _ in range(40):
            out.append(optimizer.lr)
            schedule.step()
        return out
    with_ramp, without = lrs(True), lrs(False)
    assert [with_ramp[s - 1] for s in (1, 5, 10)] == pytest.approx([2e-4, 1e-3, 2e-3])
    assert [without[s - 1] for s in (1, 5, 10)] == pytest.approx([2e-3] * 3)
    for curve in (with_ramp, without):   # the same 1/sqrt(step) decay after warmup
        assert curve[40 - 1] == pytest.approx(peak / 2)


def test_verdict_tells_training_from_stalling_and_diverging():
    unigram = 4.0
    trains = depth.verdict([6.0, 4.0, 3.0, 2.5, 2.4, 2.3, 2.2, 2.1, 2.0, 2.0], unigram)
    assert trains["outcome"] == "trains" and trains["final_loss"] == 2.0 and trains["lowest_loss"] == 2.0
    nan = depth.verdict([6.0, 4.0, float("nan")], unigram)
    assert nan["outcome"] == "diverged" and "step 3" in nan["why"] and nan["lowest_loss"] == 4.0
    assert depth.verdict([6.0, 3.0, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 5.5], unigram)["outcome"] == "diverged"
    assert depth.verdict([6.0, 5.0, 4.5, 4.2, 4.1, 4.0, 3.9, 3.9, 3.9, 3.9], unigram)["outcome"] == "stalled"


def test_unigram_loss_is_the_best_constant_prediction():
    vocab, eps = 7, 0.1
    targets = [np.array([[4, 4, 5, 0], [6, 4, 3, 0]]), np.array([[5, 3]])]   # 0 is padding
    loss = depth.unigram_loss(targets, vocab, eps)
    flat = np.array([4, 4, 5, 6, 4, 3, 5, 3])
    p = np.bincount(flat, minlength=vocab) / len(flat)

    def constant_prediction_loss(q):
        logits = mt.tensor(np.tile(np.log(q), (len(flat), 1)))
        return F.cross_entropy(logits, mt.tensor(flat), label_smoothing=eps).item()
    best = (1 - eps) * p + eps / vocab
    assert loss == pytest.approx(constant_prediction_loss(best), rel=1e-5)
    for other in (np.full(vocab, 1 / vocab), (p + 0.01) / (p + 0.01).sum()):
        assert constant_prediction_loss(other) > loss


@pytest.mark.slow
def test_depth_experiment_on_tiny_settings(tiny_corpus, tmp_path, capsys):
    out = tmp_path / "depth"
    assert main(["experiment", "depth", "--out", str(out), "--data-dir", str(tiny_corpus), *TRAINING,
                 "--layers", "1,2", "--max-steps", "3"]) == 0
    assert "| outcome |" in capsys.readouterr().out
    data = read_json(out / "depth.json")
    assert (out / "depth.png").stat().st_size > 0 and data["warmup"] == 1 and 0 < data["unigram_loss"] < math.log(120)
    assert sorted((r["layers"], r["norm"], r["schedule"]) for r in data["runs"]) == sorted(
        (n, norm, s) for n in (1, 2) for norm in ("pre", "post") for s in ("warmup", "no-warmup"))
    for r in data["runs"]:
        assert len(r["loss"]) == 3 and all(math.isfinite(x) and x > 0 for x in r["loss"])
        assert len(r["grad_norm"]) == 3 and all(g > 0 for g in r["grad_norm"])
        assert r["outcome"] in ("trains", "stalled", "diverged")
    first = {(r["layers"], r["norm"]): r["loss"][0] for r in data["runs"]}
    for r in data["runs"]:   # the same initial model and first batch whatever the schedule
        assert r["loss"][0] == first[r["layers"], r["norm"]]


# ----- gradient path -----
def test_token_windows_are_consecutive_sentences_with_eos():
    sentences = [[10, 11], [12], [13, 14, 15]]
    windows = gradient_path.token_windows(sentences, 7, 20, seed=1)
    stream = [10, 11, 3, 12, 3, 13, 14, 15, 3] * 3
    assert windows.shape == (20, 7)
    for w in windows:
        assert any(list(w) == stream[i:i + 7] for i in (0, 3, 5))


# ----- compare, then gradient-path on its runs -----
@pytest.mark.slow
def test_compare_then_gradient_path_on_its_runs(tiny_corpus, tmp_path, capsys):
    out = tmp_path / "compare"
    assert main(["experiment", "compare", "--out", str(out), "--data-dir", str(tiny_corpus), *TRAINING,
                 "--max-steps", "2", "--beam", "2"]) == 0
    assert "| test BLEU (lc) |" in capsys.readouterr().out
    data = read_json(out / "compare.json")
    assert [r["model"] for r in data["models"]] == ["transformer", "lstm", "lstm-attn"]
    for r in data["models"]:
        assert r["steps"] == 2 and 0 < r["epochs"] < 1 and r["parameters"] > 0
        assert 0 < r["train_seconds"] <= r["wall_seconds"] and r["tokens_per_s"] > 0
        assert r["test"]["split"] == "test" and r["val"]["split"] == "val" and r["test"]["beam"] == 2
        for split in ("val", "test"):
            assert 0 <= r[split]["bleu"] <= 100 and 0 <= r[split]["bleu_lowercase"] <= 100
        assert len(r["val_bleu_curve"]) == 1   # --max-steps validates once at the end
    assert (out / "compare.png").stat().st_size > 0
    assert (out / "compare.md").read_text().count("\n| ") == 4   # header and three models

    # the same runs, summarised afterwards with --runs: the same figures, without retraining (and no wall time)
    again = tmp_path / "again"
    assert main(["experiment", "compare", "--out", str(again), "--beam", "2",
                 "--runs", f"lstm={out / 'runs' / 'lstm'},transformer={out / 'runs' / 'transformer'}"]) == 0
    rows = {r["model"]: r for r in read_json(again / "compare.json")["models"]}
    assert list(rows) == ["lstm", "transformer"]
    for r in data["models"][:2]:
        row = rows[r["model"]]
        assert row["wall_seconds"] is None and row["steps"] == 2 and row["parameters"] == r["parameters"]
        assert row["test"]["bleu"] == r["test"]["bleu"] and row["val_bleu_curve"] == r["val_bleu_curve"]
    assert main(["experiment", "compare", "--out", str(again), "--runs", f"lstm={out / 'runs' / 'transformer'}"]) == 1
    assert "that run trained a transformer" in capsys.readouterr().err

    grad = tmp_path / "gradient"
    assert main(["experiment", "gradient-path", "--out", str(grad), "--runs", str(out / "runs"), "--length", "24",
                 "--windows", "3", "--directions", "2"]) == 0
    models = read_json(grad / "gradient_path.json")["models"]
    assert set(models) == {"transformer", "lstm"} and (grad / "gradient_path.png").stat().st_size > 0
    for m in models.values():
        assert m["steps"] == 2
        for stage in ("initialisation", "after 2 steps"):
            norms = np.array(m[stage]["norm_by_distance"])
            assert norms.shape == (24,) and np.all(np.isfinite(norms)) and np.all(norms > 0)
    # at initialisation the LSTM's gradient fades with distance; attention reaches every position alike
    lstm, transformer = models["lstm"]["initialisation"], models["transformer"]["initialisation"]
    assert lstm["far_over_near"] < 0.1 < transformer["far_over_near"]
    assert lstm["decades_per_10_positions"] < transformer["decades_per_10_positions"]
    assert main(["experiment", "gradient-path", "--out", str(grad), "--runs", str(out / "runs"), "--length",
                 "1000"]) == 1
    assert "takes at most max_len 256 tokens" in capsys.readouterr().err


def test_gradient_path_refuses_a_folder_without_the_runs(tmp_path, capsys):
    assert main(["experiment", "gradient-path", "--out", str(tmp_path / "g"), "--runs", str(tmp_path)]) == 1
    assert "no transformer run" in capsys.readouterr().err


# ----- fit --model lstm / lstm-attn and the commands downstream -----
@pytest.mark.slow
@pytest.mark.parametrize("kind", ["lstm", "lstm-attn"])
def test_fit_evaluate_translate_plot_an_lstm_run(kind, tiny_corpus, tmp_path, monkeypatch, capsys):
    run_dir = tmp_path / kind
    assert main(["fit", "--preset", "demo", "--model", kind, "--data-dir", str(tiny_corpus), "--src", "xs", "--tgt",
                 "xt", "--vocab-size", "120", "--batch-tokens", "96", "--run-dir", str(run_dir),
                 "--max-steps", "2"]) == 0
    config = read_config(run_dir)
    assert config.settings.model == kind and config.settings.dropout == PRESETS["demo"].lstm["dropout"]
    assert {k: config.model_config[k] for k in PRESETS["demo"].lstm} == PRESETS["demo"].lstm
    model = run_folder.load_model(run_dir, config, "last")
    assert type(model).__name__ == {"lstm": "LSTMSeq2Seq", "lstm-attn": "LSTMAttnSeq2Seq"}[kind]
    assert f"parameters: {sum(p.numel() for p in model.parameters()):,}" in capsys.readouterr().out

    assert main(["evaluate", "--run-dir", str(run_dir), "--beam", "2"]) == 0
    assert "case:lc" in capsys.readouterr().out
    monkeypatch.setattr("sys.stdin", io.StringIO("the red cat sleeps .\n\ntwo old men read books .\n"))
    assert main(["translate", "--run-dir", str(run_dir), "--beam", "2"]) == 0
    assert len(capsys.readouterr().out.split("\n")) == 4   # one line out per line in
    assert main(["plot", "--run-dir", str(run_dir)]) == 0
    printed = capsys.readouterr().out
    assert "no positional_encoding.png" in printed and (run_dir / "curves.png").is_file()
    assert (run_dir / "attention.png").is_file() == (kind == "lstm-attn")
    assert ("no attention.png" in printed) == (kind == "lstm")


# ----- sweep -----
@pytest.mark.slow
def test_sweep_scores_every_decoding_on_validation_only_and_continues(tiny_corpus, tmp_path, monkeypatch, capsys):
    grid = tmp_path / "grid.json"
    grid.write_text(json.dumps({"base": {"max_steps": 2}, "trials": {"base": {}, "dropout-0.3": {"dropout": 0.3}},
                                "decoding": {"checkpoint": ["last"], "beam": [1, 2], "length_penalty": [0.6, 1.0]}}))
    from train.data import corpus
    read = []
    original = corpus.read_parallel
    monkeypatch.setattr(corpus, "read_parallel", lambda d, split, *a: read.append(split) or original(d, split, *a))
    out = tmp_path / "sweep"
    argv = ["experiment", "sweep", "--grid", str(grid), "--out", str(out), "--data-dir", str(tiny_corpus), *TRAINING]
    assert main(argv) == 0
    data = read_json(out / "sweep.json")["trials"]
    assert set(data) == {"base", "dropout-0.3"} and data["dropout-0.3"]["settings"] == {"max_steps": 2, "dropout": 0.3}
    for trial in data.values():
        assert sorted((d["beam"], d["length_penalty"]) for d in trial["decodings"]) == [(1, .6), (1, 1.), (2, .6),
                                                                                       (2, 1.)]
        assert all(0 <= d["val_bleu"] <= 100 for d in trial["decodings"]) and trial["steps"] == 2
    assert "test" not in read and "val" in read          # chosen on validation: the test split is never read
    assert (out / "sweep.md").read_text().count("\n| ") == 3
    capsys.readouterr()
    assert main(argv) == 0                               # a second run trains nothing again
    assert capsys.readouterr().out.count("already in") == 2
    # a wider decoding grid scores only the new decodings; a run_dir trial (a run trained elsewhere) is only scored
    steps_before = {name: t["steps"] for name, t in data.items()}
    trials = {"base": {}, "dropout-0.3": {"dropout": 0.3}, "elsewhere": {"run_dir": str(out / "runs" / "base")}}
    grid.write_text(json.dumps({"base": {"max_steps": 2}, "trials": trials, "decoding": {
        "checkpoint": ["last"], "beam": [1, 2], "length_penalty": [0.6, 1.0, 1.4]}}))
    from train.loop import trainer
    monkeypatch.setattr(trainer.Trainer, "fit", lambda self: pytest.fail("a sweep trained a finished trial again"))
    assert main(argv) == 0
    assert capsys.readouterr().out.count("scoring 2 more decodings") == 2
    data = read_json(out / "sweep.json")["trials"]
    assert {name: t["steps"] for name, t in data.items() if name != "elsewhere"} == steps_before
    for trial in data.values():
        assert sorted((d["beam"], d["length_penalty"]) for d in trial["decodings"]) == [
            (1, .6), (1, 1.), (1, 1.4), (2, .6), (2, 1.), (2, 1.4)]
    elsewhere = data["elsewhere"]
    assert elsewhere["run_dir"] == str(out / "runs" / "base") and elsewhere["steps"] == 2
    # its settings: those that differ from what `fit --preset tiny` alone would use
    assert elsewhere["settings"] == {"src": "xs", "tgt": "xt", "vocab_size": 120, "batch_tokens": 96, "max_steps": 2}
    assert elsewhere["wall_minutes"] > 0
    same = {(d["beam"], d["length_penalty"]): d["val_bleu"] for d in data["base"]["decodings"]}
    assert {(d["beam"], d["length_penalty"]): d["val_bleu"] for d in elsewhere["decodings"]} == same
    assert "test" not in read


@pytest.mark.parametrize("grid, reason", [
    ({"trials": {"a": {"dropuot": 0.3}}}, "trials.a: 'dropuot' is not a fit flag"),
    ({"trials": {}}, "non-empty \"trials\""),
    ({"trials": {"a": {}}, "decoding": {"beam": 5}}, "decoding.beam: expected a non-empty list"),
    ({"trials": {"a": {}}, "seeds": [1]}, "unknown key 'seeds'"),
    ({"trials": {"a": {"run_dir": "nowhere"}}}, "trials.a: a trial with run_dir is a finished run folder to score"),
    ({"trials": {"a": {"run_dir": "nowhere", "dropout": 0.3}}}, "trials.a: run_dir takes no other keys"),
])
def test_a_bad_grid_is_one_line_naming_the_file_and_key(grid, reason, tmp_path, capsys):
    path = tmp_path / "grid.json"
    path.write_text(json.dumps(grid))
    assert main(["experiment", "sweep", "--grid", str(path), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert f"--grid {path}: " in err and reason in err and len(err.strip().splitlines()) == 1
