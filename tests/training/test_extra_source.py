"""fit --extra-source: a second source language of the training split (aligned line by line) joins training with one
shared vocabulary and a tag per source language; validation, evaluate and translate stay SRC->TGT, tagged SRC."""
import io
import json

import pytest
from cli_runner import run_cli
from conftest import FEW_PAIRS, fit_argv, make_corpus, one_line_error

from train.run import run_folder
from train.run.config import read_config
from train.loop.trainer import Trainer
from train.__main__ import main

# a third side of FEW_PAIRS: the source's words in capitals (another "language" with its own pieces)
XF = [p[0].upper() for p in FEW_PAIRS]


def trilingual(folder, copies=8, xf=None):
    make_corpus(folder, copies)
    (folder / "train.xf").write_text("".join(line + "\n" for line in (xf if xf is not None else XF * copies)))
    return folder


@pytest.fixture(scope="module")
def tagged_run(tmp_path_factory):
    base = tmp_path_factory.mktemp("extra")
    seen = {}
    original = Trainer.fit
    with pytest.MonkeyPatch.context() as m:
        m.setattr(Trainer, "fit", lambda self: seen.update(trainer=self) or original(self))
        assert main(fit_argv(trilingual(base / "corpus"), base / "run", "--extra-source", "xf", "--epochs",
                             "1")) == 0
    return base / "run", seen["trainer"]


def test_the_second_source_joins_training_with_its_own_tag(tagged_run):
    run_dir, t = tagged_run
    assert json.loads((run_dir / "config.json").read_text())["settings"]["extra_source"] == "xf"
    xs, xf = t.tok.tag_id("xs"), t.tok.tag_id("xf")
    assert xs != xf and {xs, xf}.isdisjoint(range(4))
    n = len(FEW_PAIRS) * 8
    assert len(t.training_pairs.src) == 2 * n                                  # xs->xt pairs, then xf->xt pairs
    assert [x[0] for x in t.training_pairs.src] == [xs] * n + [xf] * n
    assert t.training_pairs.src[:n] == [[xs] + ids for ids in t.tok.encode([p[0] for p in FEW_PAIRS] * 8)]
    assert t.training_pairs.src[n:] == [[xf] + ids for ids in t.tok.encode(XF * 8)]
    assert t.training_pairs.tgt[:n] == t.training_pairs.tgt[n:]                         # the same targets
    # one vocabulary for the three sides: the capitals have pieces too
    assert all(t.tok.sp.id_to_piece(i) != "<unk>" for ids in t.tok.encode(XF) for i in ids)
    # validation is xs->xt, tagged xs
    assert all(x[0] == xs for x in t.validation.pairs[0]) and all(x[0] == xs for x in t.validation.bleu_ids)


def test_a_tag_typed_as_text_is_text(tagged_run):
    _, t = tagged_run
    assert t.tok.tag_id("xs") not in t.tok.encode(["<xs> the red cat"])[0]


def test_evaluate_and_translate_tag_the_source(tagged_run, monkeypatch, capsys):
    run_dir, t = tagged_run
    tok = run_folder.load_tokenizer(run_dir, read_config(run_dir).settings)
    assert tok.source_lang == "xs"
    seen = []
    from train.evaluation import decode
    original = decode.translate_ids
    monkeypatch.setattr(decode, "translate_ids", lambda model, ids, **kw: seen.append(ids) or original(model, ids,
                                                                                                          **kw))
    monkeypatch.setattr("sys.stdin", io.StringIO("the red cat sleeps .\n"))
    status, out, err = run_cli(["translate", "--run-dir", str(run_dir), "--beam", "1"], capsys)
    assert status == 0, err
    assert seen[-1] == [[t.tok.tag_id("xs")] + t.tok.encode(["the red cat sleeps ."])[0]]
    assert main(["evaluate", "--run-dir", str(run_dir), "--split", "val", "--beam", "1"]) == 0
    assert all(ids[0] == t.tok.tag_id("xs") for ids in seen[-1]) and len(seen[-1]) == len(FEW_PAIRS)


def test_an_ensemble_refuses_a_tagged_and_an_untagged_run(tagged_run, tmp_path, capsys):
    run_dir, _ = tagged_run
    plain = tmp_path / "plain"
    assert main(fit_argv(trilingual(tmp_path / "corpus"), plain, "--epochs", "1")) == 0
    status, _, err = run_cli(["evaluate", "--run-dir", str(plain), "--split", "val", "--ensemble", str(run_dir)],
                             capsys)
    assert status == 1 and "language tags" in one_line_error(err)


def test_extra_source_errors(tmp_path, capsys):
    data = make_corpus(tmp_path / "bilingual")
    status, _, err = run_cli(fit_argv(data, tmp_path / "a", "--extra-source", "xf"), capsys)
    assert status == 1 and "--extra-source xf:" in one_line_error(err) and "train.xf" in err and "no such" in err
    data = trilingual(tmp_path / "short", xf=XF)
    status, _, err = run_cli(fit_argv(data, tmp_path / "b", "--extra-source", "xf"), capsys)
    assert status == 1 and "aligned line by line" in one_line_error(err)
    status, _, err = run_cli(fit_argv(data, tmp_path / "c", "--extra-source", "xt"), capsys)
    assert status == 2 and "a second source language, other than" in one_line_error(err)
