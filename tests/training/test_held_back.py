"""fit --held-back N: the N training pairs with the highest rare-word rate leave training, are listed in the run
folder and scored beside validation after each epoch and in `experiment sweep`'s table."""
import json

import pytest
from conftest import FEW_PAIRS, build_args, fit_argv, make_corpus, records

from train.loop.trainer import Trainer
from train.loop.validation import epoch_line
from train.data import held_back
from train.__main__ import main
from train.cli.errors import UsageError

COMMON = [p for p in FEW_PAIRS] * 10
# rare words (seen at most twice on their side): zebra, okapi, quokka (twice each), wombat; a pair's rate counts both
# sides' words
ODD = [("the zebra okapi sleeps .", "sleeps okapi zebra the ."),      # 4 rare of 8 words: 0.5
       ("a quokka dog runs home .", "home runs dog quokka a ."),      # 2 of 10: 0.2
       ("the zebra cat sleeps .", "sleeps cat zebra the ."),          # 2 of 8: 0.25
       ("okapi quokka .", "quokka okapi ."),                          # 4 of 4, but too short to be a candidate
       ("a wombat dog runs home .", "home runs dog wombat a .")]      # 2 of 10: 0.2, after quokka's line
LINES = COMMON[:7] + ODD[:1] + COMMON[7:20] + ODD[1:3] + COMMON[20:] + ODD[3:]


def line_of(pair):
    return LINES.index(pair)


def test_the_slice_is_the_highest_rare_word_rates_ties_by_line():
    src, tgt = [p[0] for p in LINES], [p[1] for p in LINES]
    index, rates = held_back.choose(src, tgt, 3)
    assert index == sorted([line_of(ODD[0]), line_of(ODD[2]), line_of(ODD[1])])
    assert sorted(rates, reverse=True) == pytest.approx([0.5, 0.25, 0.2])
    assert held_back.choose(src, tgt, 3) == (index, rates)   # deterministic
    assert line_of(ODD[4]) in held_back.choose(src, tgt, 4)[0] and line_of(ODD[3]) not in held_back.choose(src, tgt,
                                                                                                          4)[0]
    with pytest.raises(UsageError, match="--held-back 30: .* hold back at most half"):
        held_back.choose(src, tgt, 30)


@pytest.fixture(scope="module")
def held_run(tmp_path_factory):
    base = tmp_path_factory.mktemp("held")
    data = make_corpus(base / "corpus", train_src=[p[0] for p in LINES], train_tgt=[p[1] for p in LINES])
    (data / "train.xf").write_text("".join(p[0].upper() + "\n" for p in LINES))
    seen = {}
    original = Trainer.fit
    with pytest.MonkeyPatch.context() as m:
        m.setattr(Trainer, "fit", lambda self: seen.update(trainer=self) or original(self))
        assert main(fit_argv(data, base / "run", "--held-back", "2", "--extra-source", "xf", "--epochs", "1")) == 0
    return base / "run", seen["trainer"]


def test_the_held_back_pairs_leave_training_on_both_sources_and_are_listed(held_run):
    run_dir, t = held_run
    assert json.loads((run_dir / "config.json").read_text())["settings"]["held_back"] == 2
    n = len(LINES) - 2
    assert len(t.training_pairs.src) == 2 * n                      # xs->xt, then xf->xt, both without the two pairs
    pairs = t.training_pairs
    xs_src, xs_tgt, xf_src = (t.tok.decode(x) for x in (pairs.src[:n], pairs.tgt[:n], pairs.src[n:]))
    assert xs_src == [p[0] for p in LINES if p not in (ODD[0], ODD[2])] and xf_src == [x.upper() for x in xs_src]
    for pair in (ODD[0], ODD[2]):
        assert pair[0] not in xs_src and pair[1] not in xs_tgt and pair[0].upper() not in xf_src
    assert "zebra" not in " ".join(t.tok.decode(t.training_pairs.tgt))   # its two pairs are both held back
    rows = (run_dir / "held_back.tsv").read_text().splitlines()
    assert rows[0] == "line\trare_word_rate\tsource\ttarget"
    assert [r.split("\t") for r in rows[1:]] == [[str(line_of(ODD[0]) + 1), "0.500", *ODD[0]],
                                                 [str(line_of(ODD[2]) + 1), "0.250", *ODD[2]]]
    assert held_back.read_slice(run_dir, t.s) == ([ODD[0][0], ODD[2][0]], [ODD[0][1], ODD[2][1]])


def test_the_slice_is_scored_beside_validation_each_epoch(held_run, capsys):
    run_dir, t = held_run
    epoch = [r for r in records(run_dir) if r["kind"] == "epoch"][-1]
    assert epoch["held_bleu_sentences"] == 2 and 0 <= epoch["held_bleu"] <= 100
    assert epoch["held_nll"] > 0 and epoch["held_loss"] > 0 and epoch["held_nll"] != epoch["val_nll"]
    assert "held-back nll" in epoch_line(dict(epoch, train_loss=1.0), 1)


def test_the_sweep_table_scores_the_slice_with_validations_best_decoding(held_run, tmp_path, capsys):
    run_dir, _ = held_run
    grid = tmp_path / "grid.json"
    grid.write_text(json.dumps({"trials": {"held": {"run_dir": str(run_dir)}},
                                "decoding": {"checkpoint": ["last"], "beam": [1], "length_penalty": [0.6]}}))
    assert main(["experiment", "sweep", "--grid", str(grid), "--out", str(tmp_path / "sweep"), "--preset",
                 "tiny"]) == 0
    trial = json.loads((tmp_path / "sweep" / "sweep.json").read_text())["trials"]["held"]
    assert trial["held_back"]["decoding"] == ["last", 1, 0.6] and trial["held_back"]["sentences"] == 2
    table = (tmp_path / "sweep" / "sweep.md").read_text()
    assert "| held-back BLEU |" in table and f"| {trial['held_back']['bleu']:.2f} |" in table


def test_sweep_trials_take_the_issue_22_flags(tmp_path):
    from train.commands.experiments.sweep import as_flags, read_grid
    trial = {"bpe_dropout": 0.1, "rdrop": 1.0, "extra_source": "fr", "held_back": 1000}
    grid = tmp_path / "grid.json"
    grid.write_text(json.dumps({"base": {"held_back": 1000}, "trials": {"all": trial}}))
    base, trials, _ = read_grid(grid)
    assert trials == {"all": trial}
    argv = fit_argv(tmp_path, tmp_path / "run", *as_flags(trial))
    args = build_args(argv)
    assert (args.bpe_dropout, args.rdrop, args.extra_source, args.held_back) == (0.1, 1.0, "fr", 1000)
