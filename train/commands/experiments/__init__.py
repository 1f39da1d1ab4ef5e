"""experiment: rerun the classic articles' comparisons, a recipe sweep, or the costs of R-Drop and ensembles.

`python3 -m train experiment --help` lists the experiments, each with its summary (SUMMARIES below). Each writes a
markdown table (also printed), the numbers as JSON and a PNG figure into --out (default runs/experiments/NAME).
`python3 -m train experiment NAME --help` lists an experiment's options, with the ones that shrink it (--max-steps,
--lengths, --layers, ...).
"""
import argparse
from pathlib import Path

from . import compare, costs, depth, gradient_path, memory, sweep

EXPERIMENTS = {"compare": compare, "gradient-path": gradient_path, "memory": memory, "depth": depth, "sweep": sweep,
               "costs": costs}
# each experiment's one-line summary, in `experiment --help`: written here only
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
