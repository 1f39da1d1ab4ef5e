"""Every repository path and every Python name that README.md, CONTRIBUTING.md and docs/*.md name exists.

Paths: anything under a top-level folder of the repository (`minitorch/core/backward.py`, `tests/op_table.py`,
`train/loop/`), in backticks or plain; a module named as a path without `.py` (`train/__main__`) counts as its file. A
shorter path ending in a source file's name (`core/versions.py`, `loop/step.py`) must be the end of some file's path,
a bare file name (`parallel.py`) some file's name, and a file's name (`core/node.py`'s `as_of`) defined in it.
Names: dotted names rooted at the packages, at the aliases the docs import them as (`import minitorch as mt`,
`minitorch.functional as F`, `from minitorch import nn, optim`, `from minitorch.ops import array_ops as A`) or at the
short names they give the engine's module and classes (`backend.fuse`, `Function.apply`, `Tensor.__array__`), and
the names of `from minitorch... import a, b` lines: each is imported and looked up attribute by attribute. URLs and
placeholders (`<family>`, `{...}`) are not paths; a user's own files (`runs/...`, `~/.cache/...`) lie outside the
repository's folders and are not looked at.
The repository is what git tracks, never what the README's own commands leave in the tree (`python -m train fit`
makes `runs/`, `exercises start` makes `minitorch-exercises/`): those folders are the ones PRODUCED names, each with
the command that makes it, and paths under them are a user's files.
"""
import fnmatch
import importlib
import re
import subprocess
from pathlib import Path

from minitorch.tools.exercises.__main__ import DEFAULT_DIR

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
# the folders the documented commands make in the tree: a user's files, not the repository's
PRODUCED = {"runs": "python3 -m train fit writes each run folder under runs/ (train/commands/fit.py)",
            DEFAULT_DIR: "python3 -m minitorch.tools.exercises start copies the stubs there"}
ALIASES = {"minitorch": "minitorch", "mt": "minitorch", "F": "minitorch.functional", "nn": "minitorch.nn",
           "optim": "minitorch.optim", "A": "minitorch.ops.array_ops", "transformer": "transformer", "train": "train",
           # the short names the docs give the engine's module and classes (`backend.fuse`, `Function.apply`)
           "backend": "minitorch.backend", "Tensor": "minitorch.Tensor", "Function": "minitorch.Function",
           "graph_memory": "minitorch.tools.graph_memory"}
# true non-names, each with its reason; drift is fixed in the docs, never listed here
NOT_NAMES = {
    "train.SRC": "a corpus's training split, train.SRC/train.TGT (docs/design.md, Data): a file name, not the package",
    "train.TGT": "the same: the target side of a corpus's training split",
    "train.de": "Multi30k's German training split (docs/experiments.md): a file name",
    "train.fr": "Multi30k's French training split (docs/experiments.md): a file name",
}


def repository_files():
    """The files git tracks or would track (new files too; never an ignored one such as runs/...)."""
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, text=True).stdout.split()
    return listed or [str(p.relative_to(ROOT)) for p in ROOT.rglob("*") if p.is_file()]


FILES = repository_files()
FOLDERS = sorted({f.split("/")[0] for f in FILES if "/" in f} - set(PRODUCED))
SOURCE = r"(?:py|sh|ipynb|toml)"   # not .md: a program's output may be one (sweep.md); docs/*.md are under docs/
URL = re.compile(r"\b[a-z]+://\S+")
PATH = re.compile(rf"(?<![\w./~$-])((?:{'|'.join(map(re.escape, FOLDERS))})/[\w./<>{{}}*-]*)")
SHORT_PATH = re.compile(rf"(?<![\w./~$<-])((?:[a-z_][\w-]*/)+[\w-]+\.{SOURCE})(?![\w/-])")
FILE_NAME = re.compile(rf"(?<![\w./~$<-])([A-Za-z_][\w-]*\.{SOURCE})(?![\w/.-])")
NAME = re.compile(rf"(?<![\w./~$-])((?:{'|'.join(ALIASES)})(?:\.[A-Za-z_]\w*)+)")
# a file's name: `core/node.py`'s `as_of`, `x.py`: `Name`, (`core/higher_order.py`, `_twin`)
OWNED = re.compile(r"((?:[\w-]+/)*[\w-]+\.py)(?:`?'s|`?:|`,) `(\w+)(?![\w./])")
FROM_IMPORT = re.compile(r"^\s*from ((?:minitorch|transformer|train)[\w.]*) import ([\w, ]+)", re.M)


def path_exists(path):
    """A path in the repository (tracked): a file or folder, a module without its .py, or a glob that matches one."""
    path = path.rstrip(".,;:").rstrip("/")
    if "*" in path:
        return any(fnmatch.fnmatch(f, path) or fnmatch.fnmatch(f, f"{path}/*") for f in FILES)
    return any(f in (path, f"{path}.py") or f.startswith(f"{path}/") for f in FILES)


def name_exists(dotted):
    """Import the longest module prefix of the dotted name (aliases expanded), then getattr down the rest."""
    head, *rest = dotted.split(".")
    parts = ALIASES[head].split(".") + rest
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ModuleNotFoundError as error:
            if error.name != ".".join(parts[:i]) and not ".".join(parts[:i]).startswith(f"{error.name}."):
                raise   # a dependency missing, not the name: say so instead of calling the name missing
            continue
        for part in parts[i:]:
            if not hasattr(obj, part):
                return False
            obj = getattr(obj, part)
        return True
    return False


def missing_in(text, doc="<text>"):
    """'doc:line: what is missing' for every path and name of the text that does not exist."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        line = URL.sub(" ", line)
        for path in PATH.findall(line):
            if not re.search(r"[<{]", path) and not path_exists(path):
                found.append(f"{doc}:{number}: path {path}")
        covered = " ".join(PATH.findall(line))
        for path in SHORT_PATH.findall(line):
            if path.split("/")[0] in PRODUCED:
                continue   # a user's file
            if path not in covered and not any(f == path or f.endswith(f"/{path}") for f in FILES):
                found.append(f"{doc}:{number}: path {path} (no file's path ends so)")
        for name in FILE_NAME.findall(line):
            if not any(f == name or f.endswith(f"/{name}") for f in FILES):
                found.append(f"{doc}:{number}: file {name} (no file of that name)")
        for path, name in OWNED.findall(line):
            files = [f for f in FILES if f == path or f.endswith(f"/{path}")]
            if files and not any(re.search(rf"^\s*(def|class) {name}\b|^\s*{name}\s*=", (ROOT / f).read_text(), re.M)
                                 for f in files):
                found.append(f"{doc}:{number}: name {name} (not defined in {path})")
        for name in NAME.findall(line):
            if name.split(".")[-1] in {"py", "md", "sh", "ipynb", "toml"} or name in NOT_NAMES:
                continue   # a file name (transformer.py), checked above
            if not name_exists(name):
                found.append(f"{doc}:{number}: name {name}")
    for match in FROM_IMPORT.finditer(text):
        number = text.count("\n", 0, match.start()) + 1
        for name in (n.split(" as ")[0].strip() for n in match.group(2).split(",")):
            if name and not name_exists(f"{match.group(1)}.{name}"):
                found.append(f"{doc}:{number}: name {match.group(1)}.{name} (imported)")
    return found


def test_every_path_and_name_the_docs_name_exists():
    missing = [m for doc in DOCS for m in missing_in(doc.read_text(), str(doc.relative_to(ROOT)))]
    assert not missing, "the docs name what is not there:\n" + "\n".join(missing)


def test_a_wrong_path_or_name_is_reported_with_its_document_and_line():
    """Planted in a text built from this test's own file and the public API, so that it holds across refactors."""
    deep = next(Path(f) for f in FILES if f.startswith("minitorch/") and len(Path(f).parts) >= 3)
    short = "/".join(deep.parts[1:])   # e.g. core/backward.py: a path that ends a file's path
    text = ("The test is `tests/test_doc_names.py`, not `tests/test_doc_name.py`; see " + short + "\n"
            "and nowhere/" + deep.name + ", `mt.no_grad`, `mt.no_such_thing`, F.softmax, F.softmax.nope, nn.Linear,\n"
            "transformer.Ensemble, train.loop.no_module, runs/demo/config.json, https://example.org/minitorch/x.py,\n"
            "`minitorch/kernels/<family>.py`, train/__main__, test_doc_names.py, nothreads.py\n"
            "`test_doc_names.py`'s `_twin`, `backend.fuse`, `backend.fused` (`tests/test_doc_names.py`, `_twin`),\n"
            "`test_doc_names.py`'s `missing_in`\n"
            "```python\nfrom minitorch.autograd.functional import jacobian, jacobean\n```\n")
    assert missing_in(text, "planted.md") == [
        "planted.md:1: path tests/test_doc_name.py",
        f"planted.md:2: path nowhere/{deep.name} (no file's path ends so)",
        "planted.md:2: name mt.no_such_thing",
        "planted.md:2: name F.softmax.nope",
        "planted.md:3: name train.loop.no_module",
        "planted.md:4: file nothreads.py (no file of that name)",
        "planted.md:5: name _twin (not defined in test_doc_names.py)",
        "planted.md:5: name _twin (not defined in tests/test_doc_names.py)",
        "planted.md:5: name backend.fused",
        "planted.md:8: name minitorch.autograd.functional.jacobean (imported)",
    ]


def test_what_the_readmes_own_commands_leave_in_the_tree_changes_nothing(tmp_path, monkeypatch):
    """`python -m train fit` makes runs/ and `exercises start` minitorch-exercises/ in the checkout: neither is a
    repository folder, the paths under them are not checked, and an ignored file is not a repository file."""
    assert not set(PRODUCED) & set(FOLDERS)
    assert all(not f.startswith(tuple(f"{p}/" for p in PRODUCED)) for f in FILES)
    text = ("`runs/small-de-en/config.json`, runs/experiments/sweep/ and `minitorch-exercises/softmax.py`, "
            "runs/demo-en-toy/model.py")
    assert missing_in(text, "planted.md") == []
    assert "runs/" in (ROOT / ".gitignore").read_text()   # what keeps fit's folders out of FILES


# what a user's document must not say: the project's issue numbers mean nothing to a reader, and a "once X lands"
# turns false the day X lands
STALE = [re.compile(r"\bissues? #?\d+", re.I), re.compile(r"\bonce\b[^.;:]{0,80}?\blands\b", re.I)]
USER_DOCS = [*DOCS, *sorted((ROOT / "notebooks").glob("*.ipynb")), *sorted((ROOT / "examples").rglob("*.py"))]


def stale_in(text, doc="<text>"):
    """'doc: what' for each issue number and each 'once ... lands' in the text (across line breaks)."""
    flat = " ".join(text.replace("\\n", " ").split())   # (a notebook's JSON keeps its line breaks as \n)
    return [f"{doc}: {m.group(0)!r}" for pattern in STALE for m in pattern.finditer(flat)]


def test_no_document_names_an_issue_number_or_what_lands_once_something_else_has():
    found = [m for doc in USER_DOCS for m in stale_in(doc.read_text(), str(doc.relative_to(ROOT)))]
    assert not found, "say what is true now, without the project's issue numbers:\n" + "\n".join(found)
    assert stale_in("it runs once issue\n36's ctx form lands; see Issue #12", "planted.md") == [
        "planted.md: 'issue 36'", "planted.md: 'Issue #12'", "planted.md: \"once issue 36's ctx form lands\""]


def test_the_allow_list_holds_only_what_the_docs_use_and_what_is_not_a_name():
    text = " ".join(doc.read_text() for doc in DOCS)
    for name, reason in NOT_NAMES.items():
        assert re.search(rf"(?<![\w.]){re.escape(name)}\b", text), f"{name} is no longer in the docs: drop it"
        assert not name_exists(name) and reason
