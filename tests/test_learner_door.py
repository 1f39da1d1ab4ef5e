"""The README's learner door says what the code does: its install line brings what the door uses (the engine, Jupyter,
matplotlib), it names the exercise folder the tool uses, and every exercise number in the docs and notebooks is the
catalog's."""
import re
from pathlib import Path

from minitorch.tools.exercises import EXERCISES
from minitorch.tools.exercises.__main__ import DEFAULT_DIR

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
DOORS = README[README.index("**1. Learn backprop**"):README.index("**2. Train a translator**")]
USER_DOCS = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md")),
             *sorted((ROOT / "notebooks").glob("*.ipynb")), *sorted((ROOT / "minitorch/tools/exercises/stubs").glob(
                 "*.py"))]


def extras():
    """{extra: [requirement names]} from pyproject.toml's [project.optional-dependencies] (no tomllib on 3.10)."""
    text = (ROOT / "pyproject.toml").read_text()
    table = text[text.index("[project.optional-dependencies]"):]
    table = table[:table.index("\n[", 1)]
    found = {}
    for name, body in re.findall(r"^(\w+) = \[(.*?)\]", table, re.M | re.S):
        found[name] = [re.match(r"[\w-]+", r).group(0) for r in re.findall(r'"([^"]+)"', body)]
    return found


def test_the_learner_line_installs_the_engine_jupyter_and_matplotlib():
    line = re.search(r"^python3 -m pip install -e '\.\[(\w+)\]'", DOORS, re.M)
    assert line, "the learner door has no install line"
    packages = extras()[line.group(1)]
    assert {"notebook", "matplotlib"} <= set(packages), packages
    opened = re.findall(r"^jupyter notebook (\S+)", DOORS, re.M)   # what the line is for: a folder of notebooks
    assert opened and all(sorted((ROOT / folder).glob("*.ipynb")) for folder in opened), opened
    assert set(packages) <= set(extras()["dev"])   # a developer's install has the learner's too


def test_the_docs_name_the_exercise_folder_the_tool_uses():
    folders = []
    for doc in USER_DOCS:
        text = doc.read_text()
        folders += re.findall(r"minitorch\.tools\.exercises start ([\w./-]+)", text)
        folders += re.findall(r"exercises check \w+ --dir ([\w./-]+)", text)
        folders += re.findall(r"\b([\w-]*exercises)/", text.replace("tools/exercises/", ""))
    names = {Path(f).name for f in folders}   # (a notebook's folder lies in a scratch folder)
    assert folders and names <= {DEFAULT_DIR, "DIR", "THIS_FOLDER"}, sorted(set(folders))


def test_every_exercise_number_in_the_docs_is_the_catalogs():
    """'exercise 12 (softmax)', 'Exercise 12, softmax': the number must be the catalog's; a number without the
    exercise's name next to it (or a range) is refused: name exercises by name."""
    numbers = {e.name: k for k, e in enumerate(EXERCISES, 1)}
    wrong = []
    for doc in USER_DOCS:
        for match in re.finditer(r"\b[Ee]xercises? (\d+)([-–]\d+)?(?:\W{1,3}(\w+))?", doc.read_text()):
            number, span, name = match.groups()
            if span or numbers.get(name) != int(number):
                wrong.append(f"{doc.relative_to(ROOT)}: {match.group(0)!r}")
    assert not wrong, "exercise numbers that are not the catalog's (name the exercise instead):\n" + "\n".join(wrong)
