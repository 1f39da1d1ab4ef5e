"""Run the notebooks in notebooks/ top to bottom with this checkout's code, and store or check their outputs.

    python3 scripts/run_notebooks.py --write     # execute every notebook and save it with its outputs (pictures too)
    python3 scripts/run_notebooks.py --check     # execute them and compare with the saved outputs (what CI does)
    python3 scripts/run_notebooks.py --write notebooks/1_autograd_by_hand.ipynb   # one notebook

Each notebook runs in a scratch folder, importing this checkout's packages, with one BLAS thread. --check compares
what is deterministic: each code cell's outputs in order, their kinds, the text with the figures that measure time or
speed masked (see `volatile`), and each picture's presence and pixel size within 10% (not its bytes, which vary with
matplotlib's version, nor its exact size, which a plot fitted to its labels takes from the times it shows). Needs the
dev extra (nbclient, nbformat, ipykernel: pip install -e '.[dev]').
"""
import argparse
import difflib
import os
import re
import struct
import sys
import tempfile
import time
from base64 import b64decode
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
# a line that reports a measured time, rate or the host's memory: its numbers vary from run to run and are masked
VOLATILE = re.compile(r"\d\s*(s|ms|µs|us|sec|seconds|MB|GB|tokens/s|sentences/s|steps/s)\b|\btime\b|faster|slower"
                      r"|\d+(\.\d+)?x\b|\bspeed|elapsed|Graphviz", re.I)
NUMBER = re.compile(r"\d+(?:[.,]\d+)*(?:e[-+]?\d+)?")
# a scratch folder that a notebook made with tempfile: a new name each run
SCRATCH = re.compile(re.escape(tempfile.gettempdir()) + r"/tmp\w+")
# rounding noise (|hand - engine| = 1.1e-16): below 1e-6 its digits depend on the BLAS and the CPU, so it is compared
# as "tiny"
TINY = re.compile(r"-?\d(?:\.\d+)?e-(?:0[7-9]|[1-9]\d)")


def execute(notebook, timeout=600):
    """Execute the notebook in place, in a scratch folder, its kernel importing this checkout's packages and using one
    BLAS thread; returns the seconds it took."""
    import nbclient
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        nbclient.NotebookClient(notebook, timeout=timeout, kernel_name="python3", record_timing=False,
                                resources={"metadata": {"path": scratch}}).execute(env=env)
    return time.perf_counter() - start


def png_size(data):
    """(width, height) from a base64 PNG's header."""
    raw = b64decode(data[:64])
    return struct.unpack(">II", raw[16:24])


def volatile(line):
    return bool(VOLATILE.search(line))


def summary(notebook):
    """What --check compares: per code cell, its outputs as lines of text (masked where volatile) and pictures as
    'image/png WxH' or 'image/svg+xml'. Consecutive stream outputs are joined first: the kernel cuts printed text
    into chunks where it happens to flush, which differs from run to run."""
    cells = []
    for i, cell in enumerate(c for c in notebook.cells if c.cell_type == "code"):
        texts = []   # the cell's outputs in order: text (streams joined) or a picture's line
        for out in cell.outputs:
            kind, data = out.output_type, out.get("data", {})
            if kind == "stream" and texts and isinstance(texts[-1], list) and texts[-1][0] == out.name:
                texts[-1][1] += out.text
            elif kind == "stream":
                texts.append([out.name, out.text])
            elif kind == "error":
                texts.append(["error", f"{out.ename}: {out.evalue}"])
            elif "image/png" in data:
                texts.append("[image/png %dx%d]" % png_size(data["image/png"]))
            elif "image/svg+xml" in data:
                texts.append("[image/svg+xml]")
            else:
                texts.append(["result", data.get("text/plain", "")])
        lines = []
        for text in texts:
            if isinstance(text, str):
                lines.append(text)
                continue
            for line in text[1].splitlines():
                line = TINY.sub("tiny", SCRATCH.sub("SCRATCH", line))
                # a measured number's width moves the columns after it: spaces are compared as one there
                lines.append(" ".join(NUMBER.sub("#", line).split()) if volatile(line) else line)
        cells.append((i, lines))
    return cells


IMAGE = re.compile(r"^cell \d+: \[image/png (\d+)x(\d+)\]$")


def same_size(a, b, tolerance=0.1):
    """Two pictures' sizes agree within 10% a side: a plot fitted to its labels ('tight') grows with a time's digits."""
    a, b = IMAGE.match(a), IMAGE.match(b)
    return bool(a and b) and all(abs(int(x) - int(y)) <= tolerance * int(x) for x, y in zip(a.groups(), b.groups()))


def differences(saved, executed):
    """Lines of a unified diff between two summaries, empty when they agree."""
    def flat(cells):
        return [f"cell {i}: {line}" for i, lines in cells for line in lines]
    saved, executed = flat(saved), flat(executed)
    executed = [saved[i] if i < len(saved) and same_size(saved[i], line) else line for i, line in enumerate(executed)]
    return list(difflib.unified_diff(saved, executed, "saved", "executed", lineterm="", n=1))


def main(argv=None):
    import nbformat
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="save each notebook with its new outputs")
    mode.add_argument("--check", action="store_true", help="fail when the saved outputs differ from new ones")
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: every notebook in notebooks/")
    args = parser.parse_args(argv)
    failed = 0
    for path in args.notebooks or NOTEBOOKS:
        if not path.is_file():
            parser.error(f"{path}: no such notebook")
        notebook = nbformat.read(path, as_version=4)
        saved = summary(notebook)
        seconds = execute(notebook)
        if args.write:
            nbformat.write(notebook, path)
            print(f"{path.name}: {seconds:.0f} s, written")
            continue
        diff = differences(saved, summary(notebook))
        failed += bool(diff)
        print(f"{path.name}: {seconds:.0f} s, " + ("outputs differ from the saved ones:" if diff else "outputs agree"))
        print("\n".join(diff[:60]))
    if failed:
        print(f"{failed} notebook(s) differ: regenerate them with python3 scripts/run_notebooks.py --write")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
