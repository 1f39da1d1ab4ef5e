"""translate: source sentences on stdin, translations on stdout, one line in, one line out (detokenized).

From a terminal each line is translated as soon as it is typed; from a pipe or file the lines are translated in
length-sorted batches and written in their original order.
"""
import sys

from . import run
from .arguments import add_device_argument, positive_float, positive_int
from .checkpoint import CHECKPOINTS
from .decode import translate_lines
from .errors import TrainError


def add_arguments(p):
    p.add_argument("--run-dir", required=True, help="a run folder made by `python -m train fit`")
    p.add_argument("--beam", type=positive_int, default=5, help="beam size; 1 = greedy (default 5)")
    p.add_argument("--length-penalty", type=positive_float, default=0.6, help="GNMT length penalty alpha (0.6)")
    p.add_argument("--checkpoint", choices=CHECKPOINTS, default="best", help="which weights (default: best)")
    p.add_argument("--batch-tokens", type=positive_int, default=4096, help="source tokens per decoding batch")
    add_device_argument(p)


def main(args):
    device = run.check_device(args.device)
    config = run.load_config(args.run_dir)
    tokenizer = run.load_tokenizer(args.run_dir)
    model = run.load_model(args.run_dir, config, args.checkpoint, device)
    kw = dict(beam=args.beam, length_penalty=args.length_penalty, batch_tokens=args.batch_tokens, device=device)
    if sys.stdin.isatty():
        for line in sys.stdin:
            print(translate_lines(model, tokenizer, [line.rstrip("\r\n")], **kw)[0], flush=True)
        return 0
    try:
        lines = [line.rstrip("\r\n") for line in sys.stdin]
    except UnicodeDecodeError as e:
        raise TrainError(f"stdin is not UTF-8 text ({e.reason})") from None
    for text in translate_lines(model, tokenizer, lines, **kw):
        sys.stdout.write(text + "\n")
    sys.stdout.flush()
    return 0
