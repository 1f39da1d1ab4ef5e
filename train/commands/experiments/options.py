"""Command-line options the experiments share: comma-separated lists, and the training flags passed on to `fit`."""
import argparse

from ...cli.arguments import add_device_argument, non_negative_int, positive_float, positive_int
from ...run.presets import PRESETS


def int_list(text):
    """'16,32,64' -> [16, 32, 64] (each a positive integer)."""
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise argparse.ArgumentTypeError(f"expected comma-separated positive integers, got {text!r}")
    return [positive_int(t) for t in items]


def choice_list(*choices):
    """An argparse type: a comma-separated list of some of `choices`, e.g. 'pre,post'."""
    def parse(text):
        items = [t.strip() for t in text.split(",") if t.strip()]
        bad = [t for t in items if t not in choices]
        if not items or bad:
            raise argparse.ArgumentTypeError(f"expected a comma-separated list of {', '.join(choices)}, got {text!r}")
        return list(dict.fromkeys(items))
    return parse


def add_training_arguments(p, preset="demo", max_steps=None, warmup="the preset's"):
    """The corpus, preset and budget flags of an experiment that trains models (their meaning is fit's)."""
    p.add_argument("--preset", choices=sorted(PRESETS), default=preset,
                   help=f"model sizes and training settings (default: {preset}; see `fit --help`)")
    p.add_argument("--data-dir", help="a corpus folder (default: the preset's corpus; the demo corpus is generated "
                                      "into the output folder)")
    p.add_argument("--src", help="source language suffix (default: the preset's)")
    p.add_argument("--tgt", help="target language suffix (default: the preset's)")
    p.add_argument("--vocab-size", type=positive_int, help="joint vocabulary size (default: the preset's)")
    p.add_argument("--batch-tokens", type=positive_int, help="padded tokens per batch (default: the preset's)")
    p.add_argument("--lr", type=positive_float, help="peak learning rate (default: the preset's)")
    p.add_argument("--warmup", type=positive_int, help=f"warmup steps (default: {warmup})")
    p.add_argument("--max-steps", type=positive_int, default=max_steps,
                   help="training steps per model" + (f" (default: {max_steps})" if max_steps else
                                                      " (default: the preset's epochs)"))
    p.add_argument("--seed", type=non_negative_int, default=0, help="seed of initialisation and data order (0)")
    add_device_argument(p)


def fit_flags(args, names=("src", "tgt", "vocab_size", "batch_tokens", "lr", "warmup", "max_steps", "epochs",
                           "seed")):
    """The `fit` command-line flags for the training options given to an experiment."""
    flags = []
    for name in names:
        value = getattr(args, name, None)
        if value is not None:
            flags += [f"--{name.replace('_', '-')}", str(value)]
    return flags
