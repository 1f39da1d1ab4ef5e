"""Grading a folder of wrong answers, each declaring its true mistake, to measure what the grader tells a learner:
a named diagnosis that is true, numbers only (no diagnosis), or a false diagnosis (one the declared mistake does not
match). Each file is EXERCISE__what.py, a whole student file with a module-level MISTAKE: a regular expression that
a true account of its mistake matches (in the failure's first line or its diagnosis)."""
import ast
import re
import shutil
import tempfile
from collections import Counter
from pathlib import Path

from .catalog import BY_NAME
from .failure import ExerciseFailed

VERDICTS = ("named", "numbers only", "false", "passed")


def declared(path):
    """(exercise name, MISTAKE pattern) of a wrong answer's file."""
    exercise = path.stem.split("__")[0]
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["MISTAKE"]:
            return exercise, ast.literal_eval(node.value)
    raise ValueError(f"{path} declares no MISTAKE = r'...' (what a true diagnosis of it says)")


def told(message):
    """What a failure tells about the mistake: its first line, its facts (what the numbers show: a ratio, a shape)
    and its diagnoses (a cause), not the numbers."""
    lines = message.splitlines()
    return "\n".join(lines[:1] + [ln for ln in lines[1:] if ln.startswith(("  diagnosis: ", "  fact: "))])


def verdict(message, mistake):
    """named (the declared mistake is told), false (a diagnosis that is not it) or numbers only (numbers and facts,
    no cause), for a failure's message."""
    said = told(message)
    if re.search(mistake, said, re.S):
        return "named"
    return "false" if "\n  diagnosis: " in said else "numbers only"


def grade(path):
    """(verdict, what the grader said) for one wrong answer."""
    from .loading import load
    from . import check
    name, mistake = declared(path)
    exercise = BY_NAME[name]
    with tempfile.TemporaryDirectory() as folder:
        shutil.copyfile(path, Path(folder) / f"{name}.py")
        try:
            check(name, load(exercise, folder), folder=folder)
        except ExerciseFailed as failure:
            return verdict(str(failure), mistake), told(str(failure))
    return "passed", ""


def survey(folder):
    """[(file name, verdict, what was said)] for every wrong answer in folder, in name order."""
    return [(path.name, *grade(path)) for path in sorted(Path(folder).glob("*__*.py"))]


def summary(rows):
    counts = Counter(v for _, v, _ in rows)
    return (f"{len(rows)} wrong answers: {counts['named']} named, {counts['numbers only']} numbers only, "
            f"{counts['false']} false diagnoses, {counts['passed']} passed")


__all__ = ["VERDICTS", "declared", "grade", "summary", "survey", "told", "verdict"]
