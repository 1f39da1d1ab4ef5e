"""Checkpoints that cannot be used: truncated or corrupt files, shapes that do not fit the model, weights of another
kind of model, nan weights, a weights-only file where a training state is needed. Each gives one line naming the
file (and the tensor and both shapes where they differ) with exit status 1, and never a partly loaded model."""
import errno
import json
import shutil

import numpy as np
import pytest
from conftest import fit_argv, make_corpus, one_line_error
from cli_runner import run_cli

import minitorch as mt
from train.cli.prog import PROG
from train.run import checkpoint
from train.run.config import read_config
from train.cli.errors import TrainError
from transformer import LSTMConfig, LSTMSeq2Seq


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A run folder with last, best, avg after two steps of a very small Transformer."""
    base = tmp_path_factory.mktemp("trained")
    data = make_corpus(base / "corpus")
    from train.__main__ import main
    assert main(fit_argv(data, base / "run", "--max-steps", "2")) == 0
    return base / "run", data


@pytest.fixture
def run_dir(trained, tmp_path):
    """A fresh copy of the trained run folder, to damage."""
    copy = tmp_path / "run"
    shutil.copytree(trained[0], copy)
    return copy


def translate(run_dir, capsys, *extra):
    return run_cli(["translate", "--run-dir", str(run_dir), "--beam", "1", *extra], capsys)


def resume(run_dir, data, capsys, *extra):
    """fit --resume with only the flags a user needs (the run's config.json has the rest)."""
    return run_cli(["fit", "--preset", "tiny", "--run-dir", str(run_dir), "--src", "xs", "--tgt", "xt", "--resume",
                    "--max-steps", "4", *extra], capsys)


@pytest.mark.parametrize("damage", ["truncated", "flipped bytes", "empty"])
def test_a_truncated_or_corrupt_checkpoint_is_named(run_dir, trained, capsys, damage):
    for name in ("last", "best"):
        path = run_dir / f"{name}.npz"
        data = bytearray(path.read_bytes())
        if damage == "truncated":
            data = data[:len(data) // 2]
        elif damage == "flipped bytes":
            data[len(data) // 2:len(data) // 2 + 64] = b"\x00" * 64
        else:
            data = b""
        path.write_bytes(bytes(data))
    status, out, err = resume(run_dir, trained[1], capsys)
    assert status == 1
    assert f"{run_dir / 'last.npz'}: not a readable minitorch .npz file (truncated or corrupt?)" in one_line_error(err)
    status, out, err = translate(run_dir, capsys)
    assert status == 1
    assert f"{run_dir / 'best.npz'}: not a readable minitorch .npz file (truncated or corrupt?)" in one_line_error(err)


def test_an_npz_file_from_elsewhere_is_not_taken_for_a_checkpoint(run_dir, capsys):
    np.savez(run_dir / "best.npz", weights=np.ones(3))
    status, out, err = translate(run_dir, capsys)
    assert status == 1 and "best.npz: not a minitorch save file (no __structure__ entry)" in one_line_error(err)
    mt.save({"epoch": 3}, run_dir / "best.npz")
    status, out, err = translate(run_dir, capsys)
    assert status == 1 and "best.npz: holds no model weights" in one_line_error(err)


def test_shapes_that_do_not_fit_the_model_name_the_tensor_and_both_shapes(run_dir, trained, capsys):
    config = json.loads((run_dir / "config.json").read_text())
    config["model_config"]["d_ff"] = 48                       # the checkpoints were made with d_ff 32
    (run_dir / "config.json").write_text(json.dumps(config))
    status, out, err = translate(run_dir, capsys)
    assert status == 1
    assert (f"{run_dir / 'best.npz'}: tensor encoder.layers.0.ffn.w_1.weight has shape (32, 16) in the checkpoint "
            f"but (48, 16) in the Transformer of this run") in one_line_error(err)
    status, out, err = resume(run_dir, trained[1], capsys)
    assert status == 1 and "last.npz: tensor encoder.layers.0.ffn.w_1.weight has shape (32, 16)" in err


def test_weights_of_another_kind_of_model_are_named(run_dir, trained, capsys):
    vocab = json.loads((run_dir / "config.json").read_text())["model_config"]["vocab_size"]
    lstm = LSTMSeq2Seq(LSTMConfig(vocab_size=vocab, d_embed=8, d_hidden=8, n_layers=1))
    checkpoint.save_model(run_dir / "best.npz", lstm)
    status, out, err = translate(run_dir, capsys)
    assert status == 1
    assert (f"{run_dir / 'best.npz'}: holds the weights of a LSTMSeq2Seq, but this run's model is a Transformer"
            in one_line_error(err))
    mt.save({"model": lstm.state_dict()}, run_dir / "best.npz")   # an older file that does not say its class
    status, out, err = translate(run_dir, capsys)
    assert status == 1
    message = one_line_error(err)
    assert "best.npz: does not fit the Transformer of this run:" in message
    assert "tensors are missing (first: " in message and "are not the model's (first: " in message


def test_a_run_folder_of_another_model_kind(run_dir, trained, capsys):
    status, out, err = resume(run_dir, trained[1], capsys, "--model", "lstm")
    assert status == 1
    assert "--resume: --model lstm differs from the run's transformer" in one_line_error(err)
    config = json.loads((run_dir / "config.json").read_text())
    config["settings"]["model"] = "gru"
    (run_dir / "config.json").write_text(json.dumps(config))
    status, out, err = translate(run_dir, capsys)
    assert status == 2   # a value fit never writes, as a bad flag's
    assert one_line_error(err).endswith('config.json: settings.model holds "gru"; expected one of transformer, lstm, '
                                        'lstm-attn')


def test_weights_with_nan_are_refused_and_the_model_is_left_unchanged(run_dir):
    config = read_config(run_dir)
    stored = checkpoint.load(run_dir / "best.npz")
    name = "encoder.layers.0.ffn.w_1.weight"
    stored["model"][name].data[0, 0] = np.nan
    mt.save(stored, run_dir / "best.npz")
    model = config.build_model()
    before = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    with pytest.raises(TrainError, match=f"best.npz: tensor {name} holds nan or inf values"):
        checkpoint.load_weights(model, run_dir / "best.npz")
    assert all(np.array_equal(before[k], v.numpy()) for k, v in model.state_dict().items())


def test_a_weights_only_file_as_last_cannot_be_resumed(run_dir, trained, capsys):
    shutil.copy(run_dir / "best.npz", run_dir / "last.npz")
    status, out, err = resume(run_dir, trained[1], capsys)
    assert status == 1
    assert "last.npz: not a training state that this run can continue from" in one_line_error(err)


def test_a_damaged_config_or_tokenizer_in_the_run_folder_is_named(run_dir, capsys):
    (run_dir / "spm.model").write_bytes(b"not a model")
    status, out, err = translate(run_dir, capsys)
    assert status == 1
    assert f"{run_dir / 'spm.model'}: not a readable SentencePiece model (truncated or corrupt?)" in one_line_error(err)
    for content, missing in (('{"settings": {"model": "transformer"}}', "preset, src, tgt, model_config"),
                             ("[1, 2]", "settings, model_config"), ("{", None)):
        (run_dir / "config.json").write_text(content)
        status, out, err = translate(run_dir, capsys)
        assert status == 1
        assert (f"config.json: not a run configuration written by `{PROG} fit` (no {missing})" if missing
                else "config.json: not valid JSON") in one_line_error(err)


def test_a_full_disk_or_a_file_as_run_folder_is_one_line(trained, tmp_path, monkeypatch, capsys):
    data = trained[1]
    (tmp_path / "a-file").write_text("")
    status, out, err = run_cli(fit_argv(data, tmp_path / "a-file"), capsys)
    assert status == 1 and "--run-dir " + str(tmp_path / "a-file") + ": a file, not a folder" in one_line_error(err)

    def no_space(obj, path):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))
    monkeypatch.setattr(mt, "save", no_space)
    status, out, err = run_cli(fit_argv(data, tmp_path / "run", "--max-steps", "1"), capsys)
    assert status == 1
    assert one_line_error(err).endswith(f"error: {tmp_path / 'run'}/best.npz: No space left on device")
