"""The sentence pairs a run trains and validates on: read from a split, empty sides and overlong pairs left out (and
counted), encoded with the run's tokenizer."""
from . import corpus
from ..errors import TrainError


def read_split(data_dir, split, src, tgt):
    """The aligned lines of one split without the pairs that have an empty side (their count is printed);
    TrainError when no pair is left."""
    src_lines, tgt_lines = corpus.read_parallel(data_dir, split, src, tgt)
    kept_src, kept_tgt, empty = corpus.drop_empty_pairs(src_lines, tgt_lines)
    files = f"{split}.{src}/{split}.{tgt}"
    if not kept_src:
        raise TrainError(f"{data_dir}: {files} hold no sentence pairs" + (
            f" ({len(src_lines)} lines, each with an empty side)" if src_lines else " (the files are empty)"))
    if empty:
        print(f"left out {len(empty)} of {len(src_lines)} {files} pairs with an empty side (lines "
              f"{corpus.line_list(empty)})")
    return kept_src, kept_tgt


def encode_pairs(tok, src_lines, tgt_lines, max_len, name):
    """(source ids, target ids) of the pairs whose sides both have 1 to max_len - 1 tokens; the count of those left
    out is printed."""
    src_ids, tgt_ids = tok.encode(src_lines), tok.encode(tgt_lines)
    keep, too_long, no_tokens = [], 0, 0
    for i, (x, y) in enumerate(zip(src_ids, tgt_ids)):
        if not (x and y):
            no_tokens += 1
        elif len(x) >= max_len or len(y) >= max_len:
            too_long += 1
        else:
            keep.append(i)
    if too_long:
        print(f"left out {too_long} of {len(src_ids)} {name} pairs longer than {max_len - 1} tokens "
              f"(max_len {max_len})")
    if no_tokens:
        print(f"left out {no_tokens} of {len(src_ids)} {name} pairs with a side that gives no tokens")
    return [src_ids[i] for i in keep], [tgt_ids[i] for i in keep]
