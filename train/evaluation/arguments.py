"""The options of the commands that decode with a trained run (evaluate, translate, plot): the run folder, its
checkpoint, beam and length penalty, the ensemble's other runs."""
import argparse
from pathlib import Path

from ..cli.arguments import add_device_argument, add_threads_argument, positive_float, positive_int
from ..cli.prog import PROG
from ..run.checkpoint import CHECKPOINTS
from ..run.presets import DECODING


CHECKPOINT_HELP = ("which weights (default: the run's preset's choice, made on validation; best for runs from "
                   "before; last while the run has neither: before its first epoch ends)")


def add_decoding_arguments(parser):
    """The options shared by the commands that decode with a trained run (evaluate, translate)."""
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


def ensemble_member(text):
    """An argparse type: 'RUN_DIR' or 'RUN_DIR:CHECKPOINT' -> (Path, checkpoint name or None)."""
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


def decoding(settings, args):
    """{checkpoint, beam, length_penalty}: each flag where given, else the run's preset's choice (made on
    validation; presets.DECODING for runs from before presets chose, given at migration)."""
    chosen = dict(DECODING, **settings.decoding)
    return {k: chosen[k] if getattr(args, k, None) is None else getattr(args, k) for k in DECODING}
