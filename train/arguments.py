"""argparse value types shared by the commands, so that bad values are argparse errors (exit status 2)."""
import argparse
from pathlib import Path

from minitorch import backend

from .prog import PROG


def _number(convert, accept, expected):
    """An argparse type: text -> convert(text); an argparse error saying `expected` when it fails or accept() says
    no."""
    def parse(text):
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
        if not accept(value):
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text}")
        return value
    return parse


positive_int = _number(int, lambda v: v > 0, "a positive integer")
non_negative_int = _number(int, lambda v: v >= 0, "an integer >= 0")
positive_float = _number(float, lambda v: 0 < v < float("inf"), "a positive number")
non_negative_float = _number(float, lambda v: 0 <= v < float("inf"), "a number >= 0")
probability = _number(float, lambda v: 0.0 <= v < 1.0, "a number in [0, 1)")  # a dropout rate


def device(text):
    """cpu, or cuda when CuPy and a GPU are usable (else an argparse error saying what is missing)."""
    if text not in backend.DEVICES:
        raise argparse.ArgumentTypeError(f"invalid choice: {text!r} (choose from {', '.join(backend.DEVICES)})")
    try:
        return backend.check_device(text)
    except RuntimeError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def add_device_argument(parser):
    parser.add_argument("--device", type=device, default="cpu", metavar="{cpu,cuda}",
                        help="where to compute (default: cpu)")


CHECKPOINT_HELP = ("which weights (default: the run's preset's choice, made on validation; best for runs from "
                   "before; last while the run has neither: before its first epoch ends)")


def add_decoding_arguments(parser):
    """The options shared by the commands that decode with a trained run (evaluate, translate)."""
    from .loop.checkpoint import CHECKPOINTS
    parser.add_argument("--run-dir", required=True, help=f"a run folder made by `{PROG} fit`")
    parser.add_argument("--beam", type=positive_int, help="beam size; 1 = greedy (default: the run's preset's "
                                                          "choice, made on validation; 5 for runs from before)")
    parser.add_argument("--length-penalty", type=positive_float, help="GNMT length penalty alpha (default: the run's "
                                                                      "preset's choice; 0.6 for runs from before)")
    parser.add_argument("--checkpoint", choices=CHECKPOINTS, help=CHECKPOINT_HELP)
    add_ensemble_argument(parser)
    parser.add_argument("--batch-tokens", type=positive_int, default=4096, help="source tokens per decoding batch")
    add_device_argument(parser)
    add_threads_argument(parser)


def add_threads_argument(parser):
    parser.add_argument("--threads", type=positive_int, metavar="N",
                        help="BLAS threads of each process (default: OPENBLAS_NUM_THREADS when set, else the fastest "
                             "of 1, 2, 4, ... up to the process's share of the cores, timed on the preset's matrix "
                             "products when the command starts)")


def ensemble_member(text):
    """An argparse type: 'RUN_DIR' or 'RUN_DIR:CHECKPOINT' -> (Path, checkpoint name or None)."""
    from .loop.checkpoint import CHECKPOINTS
    folder, _, name = text.rpartition(":")
    if folder and name in CHECKPOINTS:
        return Path(folder), name
    if not text:
        raise argparse.ArgumentTypeError("expected RUN_DIR or RUN_DIR:CHECKPOINT, got ''")
    return Path(text), None


def add_ensemble_argument(parser):
    parser.add_argument("--ensemble", type=ensemble_member, action="append", default=[], metavar="RUN_DIR[:CHECKPOINT]",
                        help="decode with this run's model too (repeat for more): the mean of the models' "
                             "log-probabilities at each step; CHECKPOINT (best, last, avg) defaults to the one "
                             "--run-dir uses. The runs must share the vocabulary (e.g. two seeds of one recipe)")
