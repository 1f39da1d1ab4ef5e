"""argparse value types shared by the commands, so that bad values are argparse errors (exit status 2)."""
import argparse

from minitorch import backend


def positive_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def non_negative_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {value}")
    return value


def positive_float(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text}")
    return value


def probability(text):
    """A dropout rate: a number in [0, 1)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1), got {text!r}") from None
    if not 0.0 <= value < 1.0:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1), got {text}")
    return value


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
