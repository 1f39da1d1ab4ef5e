"""What the docs list, read as facts and checked against the code: the README's layout of train/ names every module
of train/ and only modules that exist; the kernels the docstrings say exist are the registered ones."""
import re
from pathlib import Path

import minitorch  # noqa: F401  (registers the kernels)
from minitorch.core import KERNELS

ROOT = Path(__file__).resolve().parents[1]


def readme_train_layout():
    """{package: [module names]} from the README's layout block of train/: a package's line and its continuation
    lines; outside parentheses, after the first colon if there is one, the names separated by commas."""
    block = re.search(r"^train/ .*?\n((?:  .*\n)+)", (ROOT / "README.md").read_text(), re.M).group(1)
    layout, package = {}, None
    for line in block.splitlines():
        head = re.match(r"  (\w+)/\s+(.*)", line)
        if head:
            package, text = head.groups()
            layout[package] = text
        else:
            layout[package] += " " + line.strip()
    listed = {}
    for name, text in layout.items():
        while "(" in text:
            text = re.sub(r"\([^()]*\)", "", text)
        text = text.split(":", 1)[1] if ":" in text else text
        listed[name] = [item.strip() for item in text.split(",") if item.strip()]
    return listed


def test_the_readmes_train_layout_names_every_module_of_train_and_only_those():
    listed = readme_train_layout()
    packages = {p.name for p in (ROOT / "train").iterdir() if (p / "__init__.py").is_file()}
    assert set(listed) == packages, (sorted(listed), sorted(packages))
    for package, names in listed.items():
        folder = ROOT / "train" / package
        present = {p.stem for p in folder.glob("*.py") if p.stem != "__init__"} | {
            f"{p.name}/" for p in folder.iterdir() if (p / "__init__.py").is_file()}
        assert sorted(names) == sorted(present), f"train/{package}/: README lists {sorted(names)}, there are " \
                                                 f"{sorted(present)}"


def test_the_layout_reader_sees_a_missing_or_an_invented_module():
    listed = readme_train_layout()
    assert "step" in listed["loop"] and "bench/" in listed["commands"] and "memory" in listed["cli"]
    assert all(re.fullmatch(r"\w+/?", name) for names in listed.values() for name in names), listed


def test_every_registered_kernel_is_a_gpu_kernel_as_the_docstrings_say():
    """minitorch/kernels/__init__.py, ops/elementwise.py and core/function.py say the CPU runs the reference ops."""
    assert KERNELS and {device for _, device in KERNELS} == {"cuda"}
    for path in ("minitorch/kernels/__init__.py", "minitorch/ops/elementwise.py", "minitorch/core/function.py"):
        assert "CPU paths" not in (ROOT / path).read_text(), path
