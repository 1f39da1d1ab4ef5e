"""Corpora a user brings, with their faults: each ends in a one-line reason naming the file (exit status 1), or is
survived with the count of what was left out reported."""
import gzip

import pytest
from conftest import FEW_PAIRS as PAIRS
from conftest import fit_argv, make_corpus, one_line_error

from train.data import corpus, pairs
from train.cli.errors import TrainError
from cli_runner import run_cli

def test_a_missing_file_says_what_was_looked_for_and_where(tmp_path, capsys):
    data = make_corpus(tmp_path / "corpus")
    (data / "val.xt").unlink()
    status, out, err = run_cli(fit_argv(data, tmp_path / "run"), capsys)
    assert status == 1
    assert f"missing val.xt[.gz] in {data.resolve()}" in one_line_error(err)
    status, out, err = run_cli(fit_argv(tmp_path / "nowhere", tmp_path / "run"), capsys)
    assert status == 1 and f"--data-dir {tmp_path / 'nowhere'}: no such folder" in one_line_error(err)


def test_source_and_target_of_different_lengths_name_both_files_and_both_counts(tmp_path, capsys):
    data = make_corpus(tmp_path / "corpus", train_tgt=[p[1] for p in PAIRS] * 8 + ["one line too many"])
    status, out, err = run_cli(fit_argv(data, tmp_path / "run"), capsys)
    assert status == 1
    assert f"{data.resolve() / 'train.xs'} has 32 lines but {data.resolve() / 'train.xt'} has 33" in one_line_error(err)


def test_bytes_that_are_not_utf8_give_the_file_and_the_line_number(tmp_path, capsys):
    data = make_corpus(tmp_path / "corpus")
    raw = (data / "train.xs").read_bytes().split(b"\n")
    raw[6] = b"caf\xe9 au lait"   # latin-1, not UTF-8
    (data / "train.xs").write_bytes(b"\n".join(raw))
    status, out, err = run_cli(fit_argv(data, tmp_path / "run"), capsys)
    assert status == 1
    assert f"{data.resolve() / 'train.xs'}, line 7: not UTF-8 text" in one_line_error(err)
    assert "byte 0xe9 at byte 4 of the line" in err


@pytest.mark.parametrize("content, reason", [(None, "(the files are empty)"),
                                             (["   "] * 32, "(32 lines, each with an empty side)")])
def test_an_empty_corpus_is_a_clear_error_before_any_training(tmp_path, capsys, content, reason):
    data = make_corpus(tmp_path / "corpus", train_src=content or [], train_tgt=None if content else [])
    status, out, err = run_cli(fit_argv(data, tmp_path / "run"), capsys)
    assert status == 1
    assert f"{data.resolve()}: train.xs/train.xt hold no sentence pairs {reason}" in one_line_error(err)
    assert not (tmp_path / "run" / "spm.model").exists()   # stopped before training a tokenizer


def test_a_damaged_gzip_file_is_named(tmp_path, capsys):
    data = make_corpus(tmp_path / "corpus")
    packed = gzip.compress((data / "train.xt").read_bytes())
    (data / "train.xt").unlink()
    (data / "train.xt.gz").write_bytes(packed[:len(packed) // 2])
    status, out, err = run_cli(fit_argv(data, tmp_path / "run"), capsys)
    assert status == 1 and f"{data.resolve() / 'train.xt.gz'}: cannot read" in one_line_error(err)


# ----- faults that are survived: pairs left out, the counts reported -----
def test_empty_lines_and_over_long_lines_are_left_out_and_counted(tmp_path, capsys):
    src = [p[0] for p in PAIRS] * 8
    tgt = [p[1] for p in PAIRS] * 8
    src[0] = ""                        # line 1: empty source
    src[5] = " \t "                    # line 6: blank source
    tgt[7] = ""                        # line 8: empty target
    src[9] = " ".join(["word"] * 200)  # line 10: far beyond --max-len 32
    data = make_corpus(tmp_path / "corpus", train_src=src, train_tgt=tgt)
    status, out, err = run_cli(fit_argv(data, tmp_path / "run", "--max-steps", "1"), capsys)
    assert status == 0, err
    assert "left out 3 of 32 train.xs/train.xt pairs with an empty side (lines 1, 6, 8)" in out
    assert "29 training and 4 validation pairs" in out
    assert "left out 1 of 29 training pairs longer than 31 tokens (max_len 32)" in out


def test_read_lines_splits_at_newlines_only_and_drops_crlf_and_a_bom(tmp_path):
    (tmp_path / "a.xs").write_bytes(b"\xef\xbb\xbffirst\r\nsecond\x0bstill second\n\nlast without newline")
    assert corpus.read_lines(tmp_path / "a.xs") == ["first", "second\x0bstill second", "", "last without newline"]
    (tmp_path / "b.xs").write_bytes(b"")
    assert corpus.read_lines(tmp_path / "b.xs") == []
    with pytest.raises(TrainError, match="is a folder"):
        corpus.read_lines(tmp_path)


def test_drop_empty_pairs_reports_one_based_line_numbers():
    src, tgt, dropped = pairs.drop_empty_pairs(["a", "", "c", "d "], ["x", "y", " ", "w"])
    assert (src, tgt, dropped) == (["a", "d "], ["x", "w"], [2, 3])
    assert corpus.line_list(list(range(1, 9))) == "1, 2, 3, 4, 5 and 3 more"
