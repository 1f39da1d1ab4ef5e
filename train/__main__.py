"""The CLI: `python -m train <command> [options]`; `python -m train <command> --help` lists each command's options.

Each command is a module with add_arguments(parser) and main(args) -> exit status, registered in COMMANDS.
Bad input gives a one-line reason on stderr: exit status 2 for bad arguments (also flags that cannot work together, or
--device cuda without a usable GPU), 1 for problems found while running, 130 after Ctrl-C.
"""
import argparse
import os
import sys

from .commands import bench, check_gpu, evaluate, experiments, fit, plot, translate
from .errors import TrainError, error_message

COMMANDS = {
    "fit": fit,
    "evaluate": evaluate,
    "translate": translate,
    "plot": plot,
    "bench": bench,
    "experiment": experiments,
    "check-gpu": check_gpu,
}


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line (no usage block), exit status 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser():
    parser = Parser(prog="python -m train", description="Train, evaluate and use translation models built on "
                                                        "minitorch. `python -m train COMMAND --help` for each.")
    commands = parser.add_subparsers(dest="command", metavar="command", required=True, parser_class=Parser)
    for name, module in COMMANDS.items():
        summary = module.__doc__.splitlines()[0].partition(": ")[2]
        module.add_arguments(commands.add_parser(name, help=summary, description=module.__doc__,
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
            print(f"python -m train {args.command}: {message}", file=sys.stderr)
        else:
            print(f"python -m train {args.command}: error: {message}", file=sys.stderr)
        return status


if __name__ == "__main__":
    sys.exit(main())
