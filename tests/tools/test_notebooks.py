"""The notebooks in notebooks/: stored with the outputs of one run top to bottom, linked from the docs, and run again
(slow) to check that the stored outputs are what the current code prints (scripts/run_notebooks.py compares)."""
import importlib.util
import re
import shutil
from pathlib import Path

import pytest

from minitorch.tools.exercises import EXERCISES

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
nbformat = pytest.importorskip("nbformat", reason="the notebook tests need the dev extras (pip install -e '.[dev]')")
_spec = importlib.util.spec_from_file_location("run_notebooks", ROOT / "scripts" / "run_notebooks.py")
run_notebooks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(run_notebooks)
REGENERATE = "python3 scripts/run_notebooks.py --write"


def test_there_are_four_notebooks_stored_with_the_outputs_of_one_run_in_order():
    assert [p.name for p in NOTEBOOKS] == ["1_autograd_by_hand.ipynb", "2_fused_backward.ipynb",
                                           "3_transformer_translates.ipynb", "4_exercises.ipynb"]
    for path in NOTEBOOKS:
        code = [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
        assert [c.execution_count for c in code] == list(range(1, len(code) + 1)), \
            f"{path.name} was not stored after one run top to bottom: {REGENERATE}"
        assert not [o for c in code for o in c.outputs if o.output_type == "error"], path.name
        assert sum(len(c.outputs) for c in code) >= len(code) // 2, f"{path.name} is stored without outputs"


def test_the_comparison_masks_times_and_scratch_folders_but_not_results():
    """What the check ignores (a time, a temporary folder's name, rounding noise) and what it does not (a value)."""
    def cells(*lines):
        return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
            outputs=[nbformat.v4.new_output("stream", name="stdout", text="\n".join(lines))])])
    same = [("greedy  BLEU  40.1    2.3 s", "greedy  BLEU  40.1    2.9 s"),
            ("|hand - engine| = 1.1e-16", "|hand - engine| = 5.6e-17"),
            ("copied into /tmp/tmpab12cd/x", "copied into /tmp/tmpzz99yy/x"),
            ("fused   9.1 ms   composed   4.2 ms", "fused   9.1 ms   composed  14.2 ms")]
    different = [("ok   softmax: 10 drawn cases", "ok   softmax: 9 drawn cases"),
                 ("dy/da = -2.9293491751468355", "dy/da = -2.9293491751468356"), ("  -> Mili piti", "  -> Mili")]
    for saved, executed in same:
        assert not run_notebooks.differences(run_notebooks.summary(cells(saved)),
                                             run_notebooks.summary(cells(executed))), saved
    for saved, executed in different:
        assert run_notebooks.differences(run_notebooks.summary(cells(saved)),
                                         run_notebooks.summary(cells(executed))), saved
    chunks = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(outputs=[
        nbformat.v4.new_output("stream", name="stdout", text=t) for t in ("True", "\ncaught: ", "it\n")])])
    assert not run_notebooks.differences(run_notebooks.summary(cells("True", "caught: it")),
                                         run_notebooks.summary(chunks))   # where the kernel flushed does not count
    pictures = [[(0, ["[image/png 990x310]"])], [(0, ["[image/png 1003x310]"])], [(0, ["[image/png 990x620]"])],
                [(0, [])]]
    assert not run_notebooks.differences(pictures[0], pictures[1])   # a plot fitted to wider labels
    assert run_notebooks.differences(pictures[0], pictures[2]) and run_notebooks.differences(pictures[0], pictures[3])


def test_the_readme_links_every_notebook_and_backprop_md_the_second():
    readme = (ROOT / "README.md").read_text()
    for path in NOTEBOOKS:
        assert f"notebooks/{path.name}" in readme, path.name
    assert "../notebooks/2_fused_backward.ipynb" in (ROOT / "docs" / "backprop.md").read_text()


def test_notebook_2_uses_the_notation_table_of_backprop_md():
    """The code's names (docs/backprop.md, "Notation"), not others: rstd, gh, soft, tanh_c; not r, h, q or u."""
    source = "\n".join(c.source for c in nbformat.read(ROOT / "notebooks" / "2_fused_backward.ipynb", 4).cells
                       if c.cell_type == "code")
    table = (ROOT / "docs" / "backprop.md").read_text().split("## Notation")[1].split("\n## ")[0]
    for name in ("xhat", "rstd", "gh", "soft", "weight", "bias", "scale", "s", "w", "dw", "ds", "tanh_c", "c_prev",
                 "dc", "grad"):
        assert f"`{name}`" in table, name
        assert re.search(rf"\b{name}\b\s*(=|,[^=\n]*=)", source), f"notebook 2 does not name {name!r}"
    for old in (r"\br = ", r"\bh = g", r"\bq = \(1", r"\bu\b", r"\bgo\b"):
        assert not re.search(old, source), old


def images(notebook):
    return [o for c in notebook.cells if c.cell_type == "code" for o in c.outputs
            if {"image/png", "image/svg+xml"} & set(o.get("data", {}))]


def text(notebook):
    return "".join(o.get("text", "") for c in notebook.cells if c.cell_type == "code" for o in c.outputs)


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_top_to_bottom_and_prints_what_it_stores(path):
    """Every cell runs without an error, in a scratch folder, importing this checkout's packages, and prints what the
    stored notebook shows (its text, times masked, and its pictures' sizes); the graphs, the paths and the bars are
    pictures (drawn by matplotlib where Graphviz's dot is missing, as here)."""
    pytest.importorskip("nbclient", reason="needs nbclient and ipykernel (pip install -e '.[dev]')")
    notebook = nbformat.read(path, as_version=4)
    saved = run_notebooks.summary(notebook)
    seconds = run_notebooks.execute(notebook)
    dot = "found" if shutil.which("dot") else "absent"
    print(f"\n{path.name}: {seconds:.1f} s, Graphviz's dot {dot}")
    diff = run_notebooks.differences(saved, run_notebooks.summary(notebook))
    assert not diff, f"{path.name}: the stored outputs differ from this run's ({REGENERATE}):\n" + "\n".join(diff[:40])
    pictures, printed = len(images(notebook)), text(notebook)
    if path.name.startswith("1_"):
        assert pictures == 3, pictures  # two graphs, and the Newton / gradient descent paths
        crawl = int(re.search(r"gradient descent: f < 1e-06 after +(\d+) steps", printed).group(1))
        jump = int(re.search(r"Newton: f < 1e-6 after (\d+) steps", printed).group(1))
        assert jump <= 10 and crawl > 1000 * jump, (jump, crawl)  # "thousands of steps", measured
    elif path.name.startswith("2_"):
        assert pictures == 1, pictures  # the time and memory bars
    elif path.name.startswith("4_"):
        assert "FAIL softmax: Softmax: forward is not written yet" in printed
        assert "FAIL softmax: Softmax: backward disagrees with central finite differences" in printed
        assert re.search(r"ok   softmax: \d+ drawn cases", printed)
        assert f"1 of {len(EXERCISES)} exercises pass" in printed
