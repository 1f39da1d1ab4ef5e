"""experiment: rerun the classic articles' comparisons (compare, gradient-path, memory, depth), or a recipe sweep.

    compare         Transformer vs LSTM vs LSTM with attention at about the same size: BLEU, time, speed
    gradient-path   |d output at the last position / d input at distance d| in an LSTM and a Transformer encoder
    memory          memory saved for backward and peak memory of a training step against sequence length
    depth           pre-LN vs post-LN at several depths, with and without warmup: loss curves, divergence
    sweep           a recipe study from a grid file: fit each trial, score every decoding on validation only
    costs           the time R-Drop adds to a training step and a two-model ensemble to decoding

Each writes a markdown table (also printed), the numbers as JSON and a PNG figure into --out (default
runs/experiments/NAME). `python3 -m train experiment NAME --help` lists an experiment's options, with the ones that
shrink it (--max-steps, --lengths, --layers, ...).
"""
import argparse
from pathlib import Path

from . import compare, costs, depth, gradient_path, memory, sweep

EXPERIMENTS = {"compare": compare, "gradient-path": gradient_path, "memory": memory, "depth": depth, "sweep": sweep,
               "costs": costs}
SUMMARIES = {"compare": "Transformer vs LSTM vs LSTM with attention at about the same size: BLEU, time, speed",
             "gradient-path": "gradient norm from the last position back to each input, LSTM vs Transformer",
             "memory": "memory of a training step against sequence length, with the growth exponent",
             "depth": "pre-LN vs post-LN at several depths, with and without warmup",
             "sweep": "a recipe study from a grid file, chosen on the validation split",
             "costs": "time of an R-Drop training step and of decoding with a two-model ensemble, against plain"}


def add_arguments(p):
    experiments = p.add_subparsers(dest="experiment", metavar="experiment", required=True, parser_class=type(p))
    for name, module in EXPERIMENTS.items():
        q = experiments.add_parser(name, help=SUMMARIES[name], description=module.__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
        q.add_argument("--out", help=f"the output folder (default: runs/experiments/{name})")
        module.add_arguments(q)


def main(args):
    out = Path(args.out or Path("runs") / "experiments" / args.experiment)
    out.mkdir(parents=True, exist_ok=True)
    return EXPERIMENTS[args.experiment].main(args, out)
