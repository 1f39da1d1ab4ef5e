"""translate: source sentences on stdin, translations on stdout, one line in, one line out (detokenized).

From a terminal each line is translated as soon as it is typed, after a prompt (Ctrl-D ends); from a pipe or file the
lines are translated in length-sorted batches and written in their original order.
"""
import os
import sys

from ..cli.arguments import check_device
from ..run import run_folder, threads
from ..run.config import read_config
from ..evaluation import ensemble
from ..evaluation.arguments import add_decoding_arguments, decoding
from ..evaluation.decode import translate_lines
from ..cli.errors import TrainError


def add_arguments(p):
    add_decoding_arguments(p)


def main(args):
    device = check_device(args.device)
    config = read_config(args.run_dir)
    threads.setup(config.settings.preset, args.threads)   # silently: stdout and stderr are the user's text
    tokenizer = run_folder.load_tokenizer(args.run_dir, config.settings)
    chosen = decoding(config.settings, args)
    model = ensemble.load_models(args, config, tokenizer, chosen["checkpoint"], device)[0]
    kw = dict(beam=chosen["beam"], length_penalty=chosen["length_penalty"], batch_tokens=args.batch_tokens,
              device=device)
    if hasattr(sys.stdout, "reconfigure"):  # UTF-8 out whatever the locale says, as the input is read
        sys.stdout.reconfigure(encoding="utf-8")
    if sys.stdin.isatty():
        return interactive(model, tokenizer, config.settings, kw)
    lines = read_stdin()
    for text in translate_lines(model, tokenizer, lines, **kw):
        sys.stdout.write(one_line(text) + "\n")
    sys.stdout.flush()
    return 0


def interactive(model, tokenizer, settings, kw):
    """Translate each line as it is typed, after a prompt on stderr (so that stdout holds translations only)."""
    end = "Ctrl-Z then Enter" if os.name == "nt" else "Ctrl-D"
    print(f"type a sentence in {settings.src} and press Enter for its {settings.tgt} translation; {end} at the "
          f"start of a line to end", file=sys.stderr)
    prompt = f"{settings.src}> "
    lines = getattr(sys.stdin, "buffer", sys.stdin)
    number = 0
    while True:
        print(prompt, end="", file=sys.stderr, flush=True)
        line = lines.readline()
        if not line:   # end of input: leave the terminal on a fresh line
            print(file=sys.stderr)
            return 0
        number += 1
        text = translate_lines(model, tokenizer, [decode_line(line, number)], first_number=number, **kw)[0]
        print(one_line(text), flush=True)


def read_stdin():
    """The lines of stdin as UTF-8 text, split at "\n" only (a "\r" before it is dropped), like corpus files."""
    data = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read()
    lines = data.split(b"\n" if isinstance(data, bytes) else "\n")
    if not lines[-1]:  # the newline at the end of the last line ends it; it does not start another
        lines.pop()
    return [decode_line(line, number) for number, line in enumerate(lines, 1)]


def decode_line(line, number):
    """One input line (bytes or str) as text without its line end; TrainError naming the line if not UTF-8."""
    if isinstance(line, bytes):
        try:
            line = line.decode("utf-8-sig" if number == 1 else "utf-8")  # a BOM may start the input
        except UnicodeDecodeError as e:
            raise TrainError(f"stdin, line {number}: not UTF-8 text ({e.reason}: byte {line[e.start]:#04x} at byte "
                             f"{e.start + 1} of the line)") from None
    return line.rstrip("\r\n")


def one_line(text):
    """A translation as one output line, whatever it holds: line alignment with the input is never lost."""
    return text.replace("\r", " ").replace("\n", " ")
