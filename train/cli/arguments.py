"""argparse value types shared by the commands, so that bad values are argparse errors (exit status 2)."""
import argparse

from minitorch import backend

from .errors import TrainError, UsageError

# a training step's precision: float32, or mixed float16 with loss scaling (train/loop/step.py)
PRECISIONS = ("fp32", "fp16")


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


def add_threads_argument(parser):
    parser.add_argument("--threads", type=positive_int, metavar="N",
                        help="BLAS threads of each process (default: OPENBLAS_NUM_THREADS when set, else the fastest "
                             "of 1, 2, 4, ... up to the process's share of the cores, timed on the preset's matrix "
                             "products when the command starts)")


PRECISION_HELP = ("fp32, or fp16: float16 activations and matrix products (float32 sums where they matter), float32 "
                  "master weights and optimizer, dynamic loss scaling; on a GPU with tensor cores the products run on "
                  "them")


def add_precision_arguments(parser, default=None):
    """--precision (fp32, or fp16: mixed precision with loss scaling) and --tf32, for the commands that take a
    precision of their own (bench, check-gpu; fit's --precision is a run setting: run/settings.py)."""
    parser.add_argument("--precision", choices=PRECISIONS, default=default,
                        help=PRECISION_HELP + " (default: " + (default or "the preset's") + ")")
    add_tf32_argument(parser)


def add_tf32_argument(parser):
    """--tf32: float32 matrix products in TF32 on cuda (a switch of the machine, like --device: not a run setting)."""
    parser.add_argument("--tf32", action="store_true",
                        help="cuda: let cuBLAS compute float32 matrix products in TF32 (10-bit mantissa) on tensor "
                             "cores, as torch.backends.cuda.matmul.allow_tf32 (compute capability 8.0 and newer)")


def apply_tf32(args, device):
    """Turn on TF32 for --tf32 (UsageError off cuda); returns whether float32 products now run in TF32."""
    if getattr(args, "tf32", False):
        if device != "cuda":
            raise UsageError("--tf32 changes how a GPU multiplies float32 matrices; pass --device cuda")
        backend.set_tf32(True)
    return backend.tf32_enabled() if device == "cuda" else False


def check_device(device):
    """The device name, or TrainError saying why it cannot be used."""
    try:
        return backend.check_device(device)
    except (RuntimeError, ValueError) as e:
        raise TrainError(str(e)) from None
