"""The recipe's regularisers (issue 13): attention dropout, activation dropout, label smoothing and weight decay,
as model fields, fit flags and the optimizer, and what a resumed run may not change."""
import json
import re

import numpy as np
import pytest
from cli_runner import run_cli
from conftest import fit_argv, make_corpus, one_line_error, records

import minitorch as mt
from minitorch import backend
from train.run.config import read_config
from train.__main__ import main
from train.loop.step import make_optimizer
from transformer import ModelConfig, Transformer
from transformer.layers import FeedForward


def tiny(**kw):
    base = dict(vocab_size=13, d_model=8, n_heads=2, d_ff=16, n_encoder_layers=1, n_decoder_layers=1, dropout=0.0,
                max_len=32)
    return ModelConfig(**{**base, **kw})


@pytest.mark.parametrize("field, value", [("attention_dropout", 1.0), ("activation_dropout", -0.1),
                                          ("attention_dropout", True)])
def test_config_rejects_dropout_rates_outside_0_1(field, value):
    with pytest.raises(ValueError, match=f"ModelConfig.{field} must be in"):
        tiny(**{field: value}).validate()


def test_without_any_dropout_training_is_deterministic_and_draws_nothing():
    mt.manual_seed(0)
    model = Transformer(tiny())
    src, tgt = np.array([[5, 6, 7, 8]]), np.array([[2, 8, 9, 10]])
    state = backend.get_rng_state()["cpu"]
    np.testing.assert_array_equal(model(src, tgt).numpy(), model(src, tgt).numpy())
    assert backend.get_rng_state()["cpu"] == state


def test_activation_dropout_zeroes_hidden_units_and_rescales_the_rest():
    """With w_2 = the identity on d_ff = d_model units, the output is dropout(relu(x W_1 + b_1)) + b_2."""
    mt.manual_seed(1)
    ffn = FeedForward(4, 4, dropout=0.5)
    ffn.w_2.weight.data = np.eye(4)
    ffn.w_2.bias.data = np.zeros(4)
    x = mt.tensor(np.abs(np.random.default_rng(0).standard_normal((50, 4))) + 0.5)
    hidden = np.maximum(x.numpy() @ ffn.w_1.weight.numpy().T + ffn.w_1.bias.numpy(), 0.0)
    out = ffn(x).numpy()
    kept = out != 0
    assert 0.3 < kept[hidden > 0].mean() < 0.7
    np.testing.assert_allclose(out[kept], 2.0 * hidden[kept], rtol=1e-6)


@pytest.mark.parametrize("wd", [0.0, 0.1])
def test_weight_decay_is_decoupled_and_zero_means_plain_adam(wd):
    """A zero gradient leaves Adam's step at zero, so what remains is the decay p <- p (1 - lr wd)."""
    p = mt.nn.Parameter(mt.tensor(np.array([1.0, -2.0, 3.0]), dtype=np.float64))
    optimizer, schedule = make_optimizer([p], 1e-3, 10, 16, weight_decay=wd)
    assert type(optimizer) is (mt.optim.AdamW if wd else mt.optim.Adam)
    lr = optimizer.lr
    p.grad = mt.tensor(np.zeros(3), dtype=np.float64)
    optimizer.step()
    np.testing.assert_allclose(p.numpy(), np.array([1.0, -2.0, 3.0]) * (1 - lr * wd), rtol=1e-12)


def test_fit_flags_reach_the_model_loss_and_optimizer_and_are_recorded(tmp_path, monkeypatch, capsys):
    data = make_corpus(tmp_path / "corpus")
    seen = {}
    from train.loop import trainer as trainer_module
    original = trainer_module.Trainer.fit

    def keep(self):
        seen["trainer"] = self
        return original(self)
    monkeypatch.setattr(trainer_module.Trainer, "fit", keep)
    flags = ["--attention-dropout", "0.15", "--activation-dropout", "0.25", "--label-smoothing", "0.05",
             "--weight-decay", "0.01", "--max-steps", "2"]
    assert main(fit_argv(data, tmp_path / "run", *flags)) == 0
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert {k: config["settings"][k] for k in ("attention_dropout", "activation_dropout", "label_smoothing",
                                               "weight_decay")} == {"attention_dropout": 0.15,
                                                                    "activation_dropout": 0.25,
                                                                    "label_smoothing": 0.05, "weight_decay": 0.01}
    assert config["model_config"]["attention_dropout"] == 0.15
    assert config["model_config"]["activation_dropout"] == 0.25
    model = read_config(tmp_path / "run").build_model()
    layer = model.decoder.layers[0]
    assert layer.self_attn.dropout == 0.15 and layer.cross_attn.dropout == 0.15
    assert layer.ffn.dropout == 0.25
    trainer = seen["trainer"]
    assert trainer.step_fn.label_smoothing == 0.05
    assert isinstance(trainer.optimizer, mt.optim.AdamW) and trainer.optimizer.hyper["weight_decay"] == 0.01
    # validation's share of the wall time is measured: per epoch record, and in the last line
    epoch = [r for r in records(tmp_path / "run") if r["kind"] == "epoch"][-1]
    assert 0 < epoch["val_seconds"] <= epoch["wall_seconds"]
    done = capsys.readouterr().out.strip().splitlines()[-1]
    assert re.search(r"validation took \d+ s of \d+ s \(\d+%\)$", done), done


def test_resume_refuses_another_weight_decay_and_lstm_refuses_transformer_dropouts(tmp_path, capsys):
    data = make_corpus(tmp_path / "corpus")
    assert main(fit_argv(data, tmp_path / "run", "--max-steps", "1")) == 0
    capsys.readouterr()
    status, out, err = run_cli(fit_argv(data, tmp_path / "run", "--resume", "--weight-decay", "0.1"), capsys)
    assert status == 1
    assert "--resume: --weight-decay 0.1 differs from the run's" in one_line_error(err)
    status, out, err = run_cli(fit_argv(data, tmp_path / "lstm", "--model", "lstm", "--attention-dropout", "0.1"),
                               capsys)
    assert status == 2
    assert "--attention-dropout is a Transformer setting; --model lstm takes --dropout" in one_line_error(err)
    assert not (tmp_path / "lstm" / "config.json").exists()


def test_evaluate_and_translate_decode_as_the_runs_preset_chose_unless_flags_say_otherwise(tmp_path, capsys,
                                                                                            monkeypatch):
    data = make_corpus(tmp_path / "corpus")
    run_dir = tmp_path / "run"
    assert main(fit_argv(data, run_dir, "--epochs", "1")) == 0
    config_path = run_dir / "config.json"
    config = json.loads(config_path.read_text())
    assert config["settings"]["decoding"] == {"checkpoint": "best", "beam": 5, "length_penalty": 0.6}  # tiny's

    def evaluations(*flags):
        (run_dir / "evaluations.jsonl").unlink(missing_ok=True)
        assert main(["evaluate", "--run-dir", str(run_dir), "--split", "val", *flags]) == 0
        r = records_of(run_dir / "evaluations.jsonl")[-1]
        return r["checkpoint"], r["beam"], r["length_penalty"]

    def records_of(path):
        return [json.loads(line) for line in path.read_text().splitlines()]

    assert evaluations() == ("best", 5, 0.6)
    config["settings"]["decoding"] = {"checkpoint": "avg", "beam": 2, "length_penalty": 1.0}
    config_path.write_text(json.dumps(config))
    assert evaluations() == ("avg", 2, 1.0)
    assert evaluations("--checkpoint", "last", "--beam", "3", "--length-penalty", "0.8") == ("last", 3, 0.8)
    del config["settings"]["decoding"]   # a run from before presets chose
    config_path.write_text(json.dumps(config))
    assert evaluations() == ("best", 5, 0.6)

    config["settings"]["decoding"] = {"checkpoint": "avg", "beam": 2, "length_penalty": 1.0}
    config_path.write_text(json.dumps(config))
    seen = {}
    from train.commands import translate
    monkeypatch.setattr(translate, "translate_lines", lambda model, tok, lines, **kw: seen.update(kw) or lines)
    monkeypatch.setattr(translate.run_folder, "load_model",
                        lambda run_dir, config, name, device: seen.update(checkpoint=name))
    import io
    monkeypatch.setattr("sys.stdin", io.StringIO("a b\n"))
    capsys.readouterr()
    assert main(["translate", "--run-dir", str(run_dir)]) == 0
    assert (seen["checkpoint"], seen["beam"], seen["length_penalty"]) == ("avg", 2, 1.0)


def test_resume_refuses_other_issue_22_regularisers(tmp_path, capsys):
    """--bpe-dropout, --rdrop, --extra-source and --held-back are recorded and belong to the run."""
    data = make_corpus(tmp_path / "corpus")
    (data / "train.xf").write_text((data / "train.xs").read_text().upper())
    assert main(fit_argv(data, tmp_path / "run", "--max-steps", "1", "--bpe-dropout", "0.1", "--rdrop", "0.5")) == 0
    settings = json.loads((tmp_path / "run" / "config.json").read_text())["settings"]
    assert {k: settings[k] for k in ("bpe_dropout", "rdrop", "extra_source", "held_back")} == {
        "bpe_dropout": 0.1, "rdrop": 0.5, "extra_source": None, "held_back": 0}
    capsys.readouterr()
    for flag, value, has in [("--bpe-dropout", "0.2", "0.1"), ("--rdrop", "1.0", "0.5"),
                             ("--extra-source", "xf", "None"), ("--held-back", "3", "0")]:
        status, out, err = run_cli(fit_argv(data, tmp_path / "run", "--resume", flag, value), capsys)
        assert status == 1
        assert f"--resume: {flag} {value} differs from the run's {has}" in one_line_error(err)
    assert main(fit_argv(data, tmp_path / "run", "--resume", "--max-steps", "2", "--bpe-dropout", "0.1")) == 0
    status, _, err = run_cli(fit_argv(data, tmp_path / "bad", "--bpe-dropout", "1.0"), capsys)
    assert status == 2 and "expected a number in [0, 1)" in err
