"""The sentence pairs a run trains and validates on: read from a split, the pairs with an empty side left out (and
counted; encoding.py encodes them, leaving out the overlong ones). The training pairs may have a second source
language (--extra-source: its lines aligned with the first's) and lose a held-back slice (--held-back)."""
from pathlib import Path

from . import corpus, held_back
from ..cli.errors import TrainError


def read_pairs(data_dir, src, tgt, extra=None, n_held=0):
    """(parts, held, val): parts a list of (source language, source lines, target lines), the training pairs of src
    and, with extra, of the extra source language (train.EXTRA aligned line by line with train.SRC); held: None or
    (source lines, target lines, line numbers from 1, rare-word rates) of the n_held pairs held back
    (held_back.choose), which no part holds (neither in src nor in extra); val: (source lines, target lines) of the
    validation split. Pairs with an empty side are left out of each (their count is printed)."""
    (src_lines, tgt_lines), val = (corpus.read_parallel(data_dir, split, src, tgt) for split in ("train", "val"))
    extra_lines = None
    if extra is not None:
        path = corpus.split_file(data_dir, "train", extra)
        if path is None:
            raise TrainError(f"--extra-source {extra}: {Path(data_dir) / f'train.{extra}'}[.gz]: no such file")
        extra_lines = corpus.read_lines(path)
        if len(extra_lines) != len(src_lines):
            raise TrainError(f"--extra-source {extra}: {path} has {len(extra_lines)} lines but "
                             f"{corpus.split_file(data_dir, 'train', src)} has {len(src_lines)}; they must be aligned "
                             f"line by line")
    held = None
    if n_held:
        index, rates = held_back.choose(src_lines, tgt_lines, n_held)
        (src_lines, held_src), (tgt_lines, held_tgt) = (held_back.split_off(x, index) for x in (src_lines, tgt_lines))
        if extra_lines is not None:
            extra_lines = held_back.split_off(extra_lines, index)[0]
        held = (held_src, held_tgt, [i + 1 for i in index], rates)
    parts = [(src, *non_empty(data_dir, "train", src, tgt, src_lines, tgt_lines))]
    if extra is not None:
        parts.append((extra, *non_empty(data_dir, "train", extra, tgt, extra_lines, tgt_lines)))
    return parts, held, non_empty(data_dir, "val", src, tgt, *val)


def non_empty(data_dir, split, src, tgt, src_lines, tgt_lines):
    """The pairs of src_lines/tgt_lines (split's) without those that have an empty side (their count is printed);
    TrainError when no pair is left."""
    kept_src, kept_tgt, empty = drop_empty_pairs(src_lines, tgt_lines)
    files = f"{split}.{src}/{split}.{tgt}"
    if not kept_src:
        raise TrainError(f"{data_dir}: {files} hold no sentence pairs" + (
            f" ({len(src_lines)} lines, each with an empty side)" if src_lines else " (the files are empty)"))
    if empty:
        print(f"left out {len(empty)} of {len(src_lines)} {files} pairs with an empty side (lines "
              f"{corpus.line_list(empty)})")
    return kept_src, kept_tgt


def drop_empty_pairs(src_lines, tgt_lines):
    """(source lines, target lines, 1-based line numbers dropped): pairs where either side is blank are left out."""
    keep, dropped = [], []
    for i, (x, y) in enumerate(zip(src_lines, tgt_lines)):
        (keep if x.strip() and y.strip() else dropped).append(i)
    return [src_lines[i] for i in keep], [tgt_lines[i] for i in keep], [i + 1 for i in dropped]
