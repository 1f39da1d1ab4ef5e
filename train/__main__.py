"""The CLI: `python3 -m train <command> [options]`; `python3 -m train <command> --help` lists each command's options.

Each command is a module with add_arguments(parser) and main(args) -> exit status, registered in COMMANDS.
Bad input gives a one-line reason on stderr: exit status 2 for bad arguments (also flags that cannot work together, or
--device cuda without a usable GPU), 1 for problems found while running, 130 after Ctrl-C.
"""
import argparse
import difflib
import os
import sys

from .cli import memory
from .cli.prog import PROG

# The pipeline's packages come with the nmt extra; without them `python -m train` says how to get them, in one line.
NMT_PACKAGES = ("sentencepiece", "sacrebleu", "tqdm", "matplotlib", "threadpoolctl")
STARTING = "start-up (loading the libraries)"


def load_commands():
    """Import the commands and the libraries they load (NumPy, SentencePiece, ...); nothing to return (a child's
    result is pickled, and modules do not pickle): the modules are then attributes of train.commands."""
    from .commands import bench, check_gpu, evaluate, experiments, fit, plot, translate  # noqa: F401


try:
    # under ulimit -v, OpenBLAS exits the process where NumPy loads it: probe tries in a child first
    memory.probe(STARTING, "", load_commands)
    load_commands()
except memory.OutOfMemory as e:
    sys.exit(f"{PROG}: error: {e}")
except ModuleNotFoundError as e:
    if (e.name or "").split(".")[0] not in NMT_PACKAGES:
        raise
    sys.exit(f"{PROG}: error: {e.name} is not installed; the translation pipeline needs the nmt extra: "
             f"pip install '.[nmt]' (in the repository's folder)")
except Exception as e:   # under `ulimit -v` loading a library can fail anywhere, and say so in odd ways
    if not memory.starting_out_of_memory(e):
        raise
    sys.exit(f"{PROG}: error: {memory.out_of_memory(STARTING, '', type(e).__name__)}")
from . import commands   # noqa: E402 (after the check above)
from .cli.errors import TrainError, error_message   # noqa: E402

COMMANDS = {
    "fit": commands.fit,
    "evaluate": commands.evaluate,
    "translate": commands.translate,
    "plot": commands.plot,
    "bench": commands.bench,
    "experiment": commands.experiments,
    "check-gpu": commands.check_gpu,
}


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line (no usage block), exit status 2; flags are never abbreviated
    (`--epoch` is not taken for `--epochs`), and an unknown flag is reported by its command's parser, with the
    nearest flag of that command."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **dict(kwargs, allow_abbrev=False))

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")

    def parse_args(self, args=None, namespace=None):
        parsed, unknown = self.parse_known_args(args, namespace)
        if unknown:
            command = command_parser(self, parsed)
            command.error(f"unrecognized arguments: {' '.join(unknown)}{nearest_flag(command, unknown)}")
        return parsed


def command_parser(parser, parsed):
    """The parser of the innermost (sub)command that parsed arguments chose (e.g. `experiment depth`'s)."""
    while True:
        sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
        chosen = getattr(parsed, sub.dest, None) if sub else None
        if chosen not in getattr(sub, "choices", {}):
            return parser
        parser = sub.choices[chosen]


def nearest_flag(parser, unknown):
    """' (did you mean --epochs?)' for the first unknown flag close to one of the parser's flags, else ''."""
    flags = [s for a in parser._actions for s in a.option_strings if s.startswith("--")]
    for word in unknown:
        close = difflib.get_close_matches(word.partition("=")[0], flags, n=1, cutoff=0.6) if word[:2] == "--" else []
        if close:
            return f" (did you mean {close[0]}?)"
    return ""


def build_parser():
    parser = Parser(prog=PROG, description=f"Train, evaluate and use translation models built on minitorch. `{PROG} "
                                           f"COMMAND --help` for each.")
    subparsers = parser.add_subparsers(dest="command", metavar="command", required=True, parser_class=Parser)
    for name, module in COMMANDS.items():
        doc = module.__doc__ or ""   # none under python -OO, which strips docstrings
        summary = doc.partition("\n")[0].partition(": ")[2] or None
        module.add_arguments(subparsers.add_parser(name, help=summary, description=module.__doc__,
                                                   formatter_class=argparse.RawDescriptionHelpFormatter))
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.command].main(args)
    except BrokenPipeError:  # e.g. `translate ... | head`: the reader has gone, which is not an error here
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so that the exit's flush cannot fail
        return 0
    except (TrainError, KeyboardInterrupt, OSError, MemoryError) as e:
        message, status = error_message(args.command, e)
        if isinstance(e, KeyboardInterrupt):
            print(f"{PROG} {args.command}: {message}", file=sys.stderr)
        else:
            print(f"{PROG} {args.command}: error: {message}", file=sys.stderr)
        return status


if __name__ == "__main__":
    sys.exit(main())
