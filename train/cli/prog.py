"""The CLI's name as the user ran it, for the commands that messages and hints suggest: `python3 -m train` when the
interpreter was started as python3, `python -m train` when as python, and so on."""
import os
import sys


def interpreter(argv=None):
    """The interpreter's name as it was started (python, python3, python3.11, ...); python3 when that is unknown
    (an embedding program, or an interpreter not named python)."""
    argv = getattr(sys, "orig_argv", None) if argv is None else argv
    name = os.path.basename(argv[0]) if argv else ""
    return name if name.startswith("python") and " " not in name else "python3"


PROG = f"{interpreter()} -m train"
