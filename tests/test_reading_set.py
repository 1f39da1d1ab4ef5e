"""docs/design.md's reading set is what scripts/reading_set.py measures on this code: the minitorch functions that
`y = a * b; y.backward(g)` and softmax's forward and backward enter, each counted whole, per file. After a change to the
engine, `python3 scripts/reading_set.py --write` rewrites the table."""
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "reading_set.py"


def _script():
    spec = importlib.util.spec_from_file_location("reading_set", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_design_mds_reading_set_is_the_scripts_output():
    """Run as a learner would, in a fresh process (default settings, this checkout's minitorch)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, str(SCRIPT), "--check"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, ("docs/design.md's reading set differs from what runs; rewrite it with "
                                  f"`python3 scripts/reading_set.py --write`:\n{done.stdout}{done.stderr}")


def test_the_check_fails_on_a_changed_figure_and_write_repairs_it(tmp_path):
    script = _script()
    measured = script.section((ROOT / "docs" / "design.md").read_text())
    assert measured and "| total: " in measured
    planted = measured.replace("| total: ", "| total: 1", 1)
    doc = tmp_path / "design.md"
    doc.write_text(f"before\n{script.BEGIN}\n{planted}{script.END}\nafter\n")
    diff = script.check(doc, output=measured)
    assert diff and "-| total: 1" in diff and "+| total: " in diff
    script.write(doc, output=measured)
    assert script.check(doc, output=measured) == ""
    assert doc.read_text().startswith("before\n") and doc.read_text().endswith("after\n")
    doc.write_text("no markers\n")
    assert "has no" in script.check(doc, output=measured)


def test_a_function_counts_from_its_def_to_its_last_line_and_what_it_holds_is_not_counted_again():
    """A closure, lambda or comprehension inside a function counted is read with it; decorators are not counted."""
    import minitorch as mt
    script = _script()
    outer = script.measure.__code__
    inner = [c for c in outer.co_consts if hasattr(c, "co_lines")]   # its comprehensions and lambdas
    assert inner
    (path, start, end, name), = script.measure([outer, *inner])
    source = SCRIPT.read_text().splitlines()
    assert (path, name) == ("scripts/reading_set.py", "measure") and source[start - 1].startswith("def measure(")
    assert end == start + len(__import__("inspect").getsource(script.measure).rstrip().splitlines()) - 1
    device = mt.Tensor.device.fget.__code__                              # @property: its def is the next line
    start, end = script.span(device)
    lines = Path(device.co_filename).read_text().splitlines()
    assert lines[device.co_firstlineno - 1].strip() == "@property" and lines[start - 1].strip().startswith("def device")


def test_each_path_meets_its_goal():
    """The reading set's bounds (GOALS): Mul at most 147 lines in 4 files, softmax at most 177 in 5, as they run now."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, str(SCRIPT)], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count(", is met)") == 2, done.stdout
