"""Ensemble decoding (evaluate/translate --ensemble): the mean of the members' log-softmax at each step, each member
with its own cache; an ensemble of one (or of two copies of one model) decodes as the model does."""
import copy
import io
import json

import numpy as np
import pytest
from cli_runner import run_cli
from conftest import fit_argv, make_corpus, one_line_error, requires_gpu, requires_standin

import minitorch as mt
import minitorch.functional as F
from minitorch import optim
from train.__main__ import main
from transformer import Ensemble, LSTMAttnSeq2Seq, LSTMConfig, ModelConfig, Transformer, beam_search, greedy_decode
from transformer.inference import inference

PAD, BOS, EOS, V = 0, 2, 3, 12


def trained(kind, seed, steps=40):
    """A model after a few Adam steps on reversing random sequences: its outputs differ between sentences."""
    mt.manual_seed(seed)
    if kind == "transformer":
        model = Transformer(ModelConfig(vocab_size=V, d_model=16, n_heads=2, d_ff=32, n_encoder_layers=1,
                                        n_decoder_layers=1, dropout=0.1, max_len=40))
    else:
        model = LSTMAttnSeq2Seq(LSTMConfig(vocab_size=V, d_embed=16, d_hidden=16, n_layers=1, dropout=0.1,
                                           max_len=40))
    rng, opt = np.random.default_rng(seed), optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(steps):
        rows = rng.integers(4, V, size=(8, 5))
        tgt = rows[:, ::-1]
        logits = model(rows, np.concatenate([np.full((8, 1), BOS), tgt], axis=1))
        loss = F.cross_entropy(logits, np.concatenate([tgt, np.full((8, 1), EOS)], axis=1), ignore_index=PAD)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model.eval()


SRC = np.array([[5, 6, 7, 8, 9], [10, 4, 11, PAD, PAD], [7, PAD, PAD, PAD, PAD], [4, 4, 9, 11, PAD]])


def log_softmax(x):
    x = x - x.max(axis=-1, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=-1, keepdims=True))


def reference_greedy(models, src, max_len_a=1.5, max_len_b=10):
    """Greedy search without caches: full forward passes over each prefix, the argmax of the mean log-softmax
    computed here in NumPy (pad and bos never chosen)."""
    out = []
    for row in src:
        row = row[None]
        limit = int(1.5 * (row != PAD).sum() + 10)
        prefix = [BOS]
        while len(prefix) - 1 < limit:
            with mt.no_grad():
                lp = np.mean([log_softmax(m(row, np.array([prefix])).numpy()[0, -1].astype(np.float64))
                              for m in models], axis=0)
            lp[[PAD, BOS]] = -np.inf
            token = int(lp.argmax())
            if token == EOS:
                break
            prefix.append(token)
        out.append(prefix[1:])
    return out


@pytest.mark.parametrize("decode", ["greedy", "beam"])
def test_an_ensemble_of_one_and_of_two_copies_decode_as_the_single_model(decode):
    model = trained("transformer", 0)
    run = (lambda m: greedy_decode(m, SRC)) if decode == "greedy" else (lambda m: beam_search(m, SRC, beam_size=4))
    single = run(model)
    assert len({tuple(h) for h in single}) > 1   # the model tells sentences apart: the comparison means something
    assert run(Ensemble([model])) == single
    assert run(Ensemble([model, copy.deepcopy(model)])) == single


def test_one_step_gives_the_mean_of_the_members_log_softmax():
    models = [trained("transformer", 0), trained("transformer", 1), trained("lstm-attn", 2)]
    ensemble = Ensemble(models)
    with inference(ensemble):
        state = ensemble.start_decoding(SRC)
        log_p, state = ensemble.decode_log_probs(np.full(len(SRC), BOS), state)
        expected = np.mean([log_softmax(m(SRC, np.full((len(SRC), 1), BOS)).numpy()[:, 0].astype(np.float64))
                            for m in models], axis=0)
    assert log_p.dtype == np.float64
    np.testing.assert_allclose(log_p.numpy(), expected, rtol=1e-6, atol=1e-6)
    assert np.abs(log_p.numpy() - log_softmax(models[0](SRC, np.full((len(SRC), 1), BOS)).numpy()[:, 0])).max() > 1e-3


def test_greedy_ensemble_of_different_models_matches_decoding_without_caches():
    """Each member's cache is kept and reordered as sentences finish at different steps."""
    models = [trained("transformer", 0), trained("lstm-attn", 3)]
    got = greedy_decode(Ensemble(models), SRC)
    assert got == reference_greedy(models, SRC)
    assert got != greedy_decode(models[0], SRC) or got != greedy_decode(models[1], SRC)


def test_a_wide_beam_scores_hypotheses_by_the_members_mean_log_probability():
    """Beam search with the ensemble returns a hypothesis at least as good, by the mean of the members' log p(Y) /
    lp(Y) computed here with full forward passes, as the greedy one (the beam holds the greedy path)."""
    models = [trained("transformer", 0), trained("transformer", 1)]

    def score(src_row, hyp, alpha=0.6):
        tgt_in, tgt_out = np.array([[BOS] + hyp]), np.array(hyp + [EOS])
        with mt.no_grad():
            total = np.mean([log_softmax(m(src_row[None], tgt_in).numpy()[0].astype(np.float64))[
                np.arange(len(tgt_out)), tgt_out].sum() for m in models])
        return total / ((5 + len(tgt_out)) / 6) ** alpha

    beam = beam_search(Ensemble(models), SRC, beam_size=6, length_penalty=0.6)
    greedy = greedy_decode(Ensemble(models), SRC)
    for row, b, g in zip(SRC, beam, greedy):
        assert score(row, b) >= score(row, g) - 1e-9


def test_members_must_share_the_vocabulary_size():
    other = Transformer(ModelConfig(vocab_size=V + 1, d_model=8, n_heads=2, d_ff=16, n_encoder_layers=1,
                                    n_decoder_layers=1, max_len=40))
    with pytest.raises(ValueError, match="vocabularies differ in size"):
        Ensemble([trained("transformer", 0, steps=1), other])


# ----- the commands -----
@pytest.fixture(scope="module")
def two_seeds(tmp_path_factory):
    """Two runs of one recipe on one corpus with different seeds, and one with another vocabulary size."""
    base = tmp_path_factory.mktemp("ensemble")
    data = make_corpus(base / "corpus")
    for name, extra in (("a", ["--seed", "1"]), ("b", ["--seed", "2"]), ("c", ["--vocab-size", "50"])):
        assert main(fit_argv(data, base / name, "--epochs", "1", *extra)) == 0
    return base


def evaluation(run_dir, *flags):
    assert main(["evaluate", "--run-dir", str(run_dir), "--split", "val", "--beam", "2", *flags]) == 0
    record = json.loads((run_dir / "evaluations.jsonl").read_text().splitlines()[-1])
    return record, (run_dir / record["hypotheses"]).read_text()


def test_evaluate_decodes_with_an_ensemble_and_records_its_members(two_seeds, capsys):
    a, b = two_seeds / "a", two_seeds / "b"
    plain, plain_hyps = evaluation(a)
    assert "ensemble" not in plain
    twice, twice_hyps = evaluation(a, "--ensemble", f"{a}:{plain['checkpoint']}")
    assert twice_hyps == plain_hyps   # two copies of one model: the model's translations
    assert twice["ensemble"] == [f"{a}:{plain['checkpoint']}"] * 2 and ".ensemble2." in twice["hypotheses"]
    both, _ = evaluation(a, "--ensemble", str(b), "--checkpoint", "last")
    assert both["ensemble"] == [f"{a}:last", f"{b}:last"]
    assert "ensemble of 2:" in capsys.readouterr().out


def test_translate_with_an_ensemble(two_seeds, monkeypatch, capsys):
    a, b = two_seeds / "a", two_seeds / "b"
    lines = "the red cat sleeps .\na small dog runs home .\n"

    def translate(*flags):
        monkeypatch.setattr("sys.stdin", io.StringIO(lines))
        status, out, err = run_cli(["translate", "--run-dir", str(a), "--beam", "2", *flags], capsys)
        assert status == 0, err
        return out

    single = translate()
    assert len(single.splitlines()) == 2
    assert translate("--ensemble", str(a)) == single
    assert len(translate("--ensemble", str(b)).splitlines()) == 2


def test_an_ensemble_refuses_runs_with_another_vocabulary(two_seeds, capsys):
    a, c = two_seeds / "a", two_seeds / "c"
    status, _, err = run_cli(["evaluate", "--run-dir", str(a), "--split", "val", "--ensemble", str(c)], capsys)
    assert status == 1
    message = one_line_error(err)
    assert f"--ensemble {c}: its vocabulary" in message and "must share one SentencePiece model" in message
    status, _, err = run_cli(["evaluate", "--run-dir", str(a), "--ensemble", f"{two_seeds / 'none'}:avg"], capsys)
    assert status == 1 and "no such folder" in one_line_error(err)


@requires_gpu
@requires_standin
@pytest.mark.parametrize("search", ["greedy", "beam"])
def test_ensemble_decoding_on_cuda_reads_the_device_once_per_token_step(search):
    import cupy
    models = [trained("transformer", 0, steps=2).to("cuda"), trained("lstm-attn", 1, steps=2).to("cuda")]
    steps = []
    for m in models:
        m.decode_step = (lambda f: lambda *a, **k: steps.append(1) or f(*a, **k))(m.decode_step)
    log = cupy._standin.SYNCS
    start = len(log)
    hyps = greedy_decode(Ensemble(models), SRC) if search == "greedy" else beam_search(Ensemble(models), SRC, 3)
    assert len(hyps) == len(SRC) and len(steps) >= 4
    assert len(log) - start <= len(steps) // 2 and all("transformer/decoding.py" in w for _, w in log[start:])


def test_the_costs_experiment_times_rdrop_and_the_ensemble_against_plain(tmp_path, capsys):
    assert main(["experiment", "costs", "--preset", "tiny", "--steps", "1", "--reps", "1", "--batch-size", "4",
                 "--seq-len", "6", "--sentences", "2", "--out", str(tmp_path)]) == 0
    seconds = json.loads((tmp_path / "costs.json").read_text())["seconds"]
    assert set(seconds) == {"plain step", "R-Drop step", "greedy, one model", "greedy, ensemble of two",
                            "beam 5, one model", "beam 5, ensemble of two"}
    assert all(len(t) == 1 and t[0] > 0 for t in seconds.values())
    assert (tmp_path / "costs.md").read_text().count("\n| ") == 4   # the header and three comparisons
