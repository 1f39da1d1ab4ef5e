"""The docs and the code say the same: every fused op has its derivation in docs/backprop.md, under its class name,
with the names its code uses; the docstrings point to their sections; links in the docs lead to files that exist."""
import inspect
import re
from pathlib import Path

import pytest

import minitorch.fused as fused_package
from minitorch.autograd import Function

ROOT = Path(__file__).resolve().parents[1]
BACKPROP = (ROOT / "docs" / "backprop.md").read_text()
SECTIONS = dict(re.findall(r"^## (\d+)\. .*\(`(\w+)`\)$", BACKPROP, re.M))   # number -> class name

# the names each derivation uses for the op's quantities: each must also be a variable of the op's code
NAMES = {"Softmax": ["y", "dx"], "LogSoftmax": ["p", "dx"], "CrossEntropy": ["E", "S", "z_sum", "s", "dx"],
         "LayerNorm": ["xhat", "rstd", "gh", "dw", "db", "dx"],
         "ScaledDotProductAttention": ["s", "w", "a", "da", "dw", "ds", "dq", "dk", "dv"],
         "LSTMCellFunction": ["gh", "gc", "dc", "c_prev", "tanh_c"]}


def fused_functions():
    import pkgutil
    import importlib
    found = {}
    for info in pkgutil.iter_modules(fused_package.__path__):
        module = importlib.import_module(f"minitorch.fused.{info.name}")
        for name, obj in vars(module).items():
            if inspect.isclass(obj) and issubclass(obj, Function) and obj.__module__ == module.__name__:
                found[name] = obj
    return found


def section_text(number):
    start = BACKPROP.index(f"\n## {number}. ")
    end = BACKPROP.find("\n## ", start + 1)
    return BACKPROP[start:end]


def test_every_fused_function_has_a_section_and_the_sections_name_real_functions():
    functions = fused_functions()
    assert set(SECTIONS.values()) | {"LogSoftmax"} == set(functions), (SECTIONS, sorted(functions))
    assert f"the {['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven'][len(SECTIONS)]} fused ops" in \
        BACKPROP.splitlines()[0]


@pytest.mark.parametrize("name", sorted(NAMES))
def test_the_docstring_points_to_the_section_and_both_use_the_codes_names(name):
    cls = fused_functions()[name]
    number = re.search(r"docs/backprop\.md section (\d)", cls.__doc__)
    assert number, f"{name}'s docstring does not name its section of docs/backprop.md"
    text = section_text(number.group(1))
    assert f"`{name}`" in text or name == "LogSoftmax" and "`LogSoftmax`" in text
    source = inspect.getsource(cls)
    for var in NAMES[name]:
        assert re.search(rf"\b{var}\b", text), f"docs/backprop.md section {number.group(1)} does not use {var!r}"
        assert re.search(rf"\b{var}\b\s*(=|,[^=]*=)|\bfor {var}\b|\b{var}\b\s*\*=", source), \
            f"{name}'s code has no variable {var!r}, which its derivation uses"


def test_links_in_the_docs_lead_to_files_that_exist():
    for doc in [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", doc.read_text()):
            if target.startswith("http"):
                continue
            assert (doc.parent / target).exists(), f"{doc.relative_to(ROOT)} links to {target}, which is missing"


def github_anchor(heading):
    """The id GitHub gives a markdown heading: lowercased, punctuation but - and _ dropped, spaces -> -."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_anchors_in_the_docs_name_headings_that_exist():
    for doc in [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for target, anchor in re.findall(r"\]\(([^)#]*)#([^)]+)\)", doc.read_text()):
            if target.startswith("http"):
                continue
            text = (doc.parent / target if target else doc).read_text()
            anchors = {github_anchor(h) for h in re.findall(r"^#+ (.+)$", text, re.M)}
            assert anchor in anchors, f"{doc.relative_to(ROOT)} links to {target}#{anchor}, a heading not there"
