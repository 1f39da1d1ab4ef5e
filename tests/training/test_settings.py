"""A run's settings: one typed object, config.json read once per command, older run folders migrated at load."""
import dataclasses
import io
import json
import pathlib

import pytest
from conftest import fit_argv, make_corpus

from cli_runner import run_cli
from train.run import checkpoint
from train.run.config import read_config
from train.run.presets import DECODING, PRESETS
from train.run.resolve import fit_defaults
from train.run.settings import OLDER_RUNS, Settings, migrate


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    base = tmp_path_factory.mktemp("settings")
    from train.__main__ import main
    assert main(fit_argv(make_corpus(base / "corpus"), base / "run", "--max-steps", "2")) == 0
    return base


def count_config_reads(monkeypatch):
    """A list that gets the path of each read of a config.json."""
    reads, read_text = [], pathlib.Path.read_text

    def counted(self, *args, **kwargs):
        if self.name == "config.json":
            reads.append(self)
        return read_text(self, *args, **kwargs)
    monkeypatch.setattr(pathlib.Path, "read_text", counted)
    return reads


@pytest.mark.parametrize("command", ["fit --resume", "fit --resume, preset from the run", "evaluate", "translate"])
def test_config_json_is_read_once_per_command(trained, command, monkeypatch, capsys):
    run_dir = trained / "run"
    argv = {"fit --resume": fit_argv(trained / "corpus", run_dir, "--resume", "--max-steps", "3"),
            "fit --resume, preset from the run": ["fit", "--resume", "--run-dir", str(run_dir), "--max-steps", "4"],
            "evaluate": ["evaluate", "--run-dir", str(run_dir), "--checkpoint", "last", "--beam", "1"],
            "translate": ["translate", "--run-dir", str(run_dir), "--checkpoint", "last", "--beam", "1"]}[command]
    if command == "translate":
        monkeypatch.setattr("sys.stdin", io.StringIO("a b c\n"))
    reads = count_config_reads(monkeypatch)
    status, out, err = run_cli(argv, capsys)
    assert status == 0, err
    assert reads == [run_dir / "config.json"]


def test_a_resumed_fit_reads_last_npz_once(tmp_path, monkeypatch, capsys):
    from train.__main__ import main
    run_dir, loads = tmp_path / "run", []
    assert main(fit_argv(make_corpus(tmp_path / "corpus"), run_dir, "--max-steps", "1")) == 0
    load = checkpoint.mt.load

    def counted(path, *args, **kwargs):
        loads.append(pathlib.Path(path))
        return load(path, *args, **kwargs)
    monkeypatch.setattr(checkpoint.mt, "load", counted)
    status, out, err = run_cli(["fit", "--resume", "--run-dir", str(run_dir), "--max-steps", "2"], capsys)
    assert status == 0, err
    assert loads[:1] == [run_dir / "last.npz"] and run_dir / "last.npz" not in loads[1:]


def test_a_new_run_writes_the_settings_that_fit_resolved_with_the_keys_it_wrote_before(trained):
    written = json.loads((trained / "run" / "config.json").read_text())["settings"]
    settings = read_config(trained / "run").settings
    assert settings.to_dict() == written
    before = [*fit_defaults(PRESETS["tiny"]).to_dict(), "data_dir"]   # the keys in the order fit wrote them
    assert list(written) == before


def test_an_older_run_folder_is_migrated_in_one_place():
    old = {k: v for k, v in fit_defaults(PRESETS["tiny"]).to_dict().items() if k not in OLDER_RUNS}
    settings = Settings.from_dict(old)
    assert settings.decoding == DECODING and settings.weight_decay == 0.0 and settings.extra_source is None
    assert settings.held_back == 0 and settings.bpe_dropout == 0.0 and settings.rdrop == 0.0
    assert migrate(dict(old, rdrop=0.5))["rdrop"] == 0.5   # a key the run has is kept
    lstm = fit_defaults(PRESETS["tiny"], "lstm").to_dict()
    assert "attention_dropout" not in lstm and "activation_dropout" not in lstm   # as an LSTM run's config.json


def test_settings_cannot_be_changed_in_place():
    settings = fit_defaults(PRESETS["tiny"])
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.epochs = 3
    assert settings.with_changes(epochs=3).epochs == 3 and settings.epochs == PRESETS["tiny"].epochs
