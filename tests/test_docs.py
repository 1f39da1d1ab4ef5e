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


# ----- the CLI's help states the defaults the code and the presets use -----
def cli_options():
    """(command, option, action) for every option of every `python -m train` command and experiment."""
    import argparse
    from train.__main__ import build_parser
    pending = [build_parser()]
    while pending:
        parser = pending.pop()
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                pending += list(action.choices.values())
            elif action.option_strings:
                yield parser.prog.split(" -m train ")[-1], action.option_strings[-1], action


def help_of(command, option):
    return next(" ".join(a.help.split()) for c, o, a in cli_options() if (c, o) == (command, option))


def test_a_stated_number_default_is_the_options_default():
    """"(default 32)", "(default: 2,6,12)": the same value as argparse's default, where the option has one."""
    checked = 0
    for command, option, action in cli_options():
        stated = re.search(r"\(default:? ([\d.,]+)\)", action.help or "")
        if stated and action.default is not None:
            value = action.default if isinstance(action.default, list) else [action.default]
            assert stated.group(1).split(",") == [str(v) for v in value], (command, option, action.help)
            checked += 1
    assert checked >= 8


def test_the_help_states_the_presets_settings():
    from train.presets import DECODING, PRESETS
    from train.settings import fit_defaults
    vocab = ", ".join(f"{name} {p.vocab_size:,}" for name, p in PRESETS.items())
    assert f"(default: the preset's: {vocab})" in help_of("fit", "--vocab-size")
    assert f"(default {fit_defaults(PRESETS['tiny'])['seed']})" in help_of("fit", "--seed")
    for command in ("evaluate", "translate"):   # a run from before presets chose its decoding uses DECODING
        assert f"{DECODING['beam']} for runs from before)" in help_of(command, "--beam")
        assert f"{DECODING['length_penalty']} for runs from before)" in help_of(command, "--length-penalty")
        assert f"{DECODING['checkpoint']} for runs from before;" in help_of(command, "--checkpoint")
    from train.commands.bench import SEQ_LEN   # the bench's batch: batch tokens / SEQ_LEN sentences
    assert f"{PRESETS['small'].batch_tokens // SEQ_LEN} for small)" in help_of("bench", "--batch-size")
    demo_width = PRESETS["demo"].model["d_model"]
    assert f"(default: demo, d_model {demo_width})" in help_of("experiment memory", "--preset")


def test_the_readme_states_the_small_presets_recipe_and_decoding():
    from train.presets import PRESETS
    small, readme = PRESETS["small"], " ".join((ROOT / "README.md").read_text().split())
    d, lr = small.decoding, f"{small.lr:.0e}".replace("e-0", "e-")   # 2e-3
    assert (f"BPE {small.vocab_size:,}, warmup to a peak learning rate of {lr}, dropout "
            f"{small.model['dropout']:g}, {small.epochs} epochs, then the average of the last {small.avg_last} epochs "
            f"decoded with beam {d['beam']} and length penalty {d['length_penalty']:g}") in readme
    assert d["checkpoint"] == "avg" and "(`avg` for `small`, `best` for the others" in readme
    assert all(p.decoding["checkpoint"] == "best" for name, p in PRESETS.items() if name != "small")
