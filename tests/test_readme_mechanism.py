"""The README's first code is the mechanism itself (a Value, its parents, local derivatives, the walk in reverse
topological order), and the block after it is the same graph on minitorch's Tensor: both run as written and give
the gradients that central finite differences give."""
import contextlib
import io
import math
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
BLOCKS = re.findall(r"^```python\n(.*?)^```", README, re.M | re.S)


def run(block):
    namespace, out = {}, io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, "README.md", "exec"), namespace)
    return namespace, out.getvalue()


def test_the_first_code_on_the_readme_is_the_backward_walk_and_it_runs():
    first = README.index("```")
    assert README[first:].startswith("```python\n") and README[first + 10:].startswith(BLOCKS[0])
    assert len(BLOCKS[0].splitlines()) <= 40
    for part in ("class Value", "parents", "local", "reversed(order)", "parent.grad += d * v.grad"):
        assert part in BLOCKS[0], part
    namespace, printed = run(BLOCKS[0])
    x, w = namespace["x"], namespace["w"]

    def y(x, w):
        return math.tanh(x * w + x)

    eps = 1e-6
    dx = (y(0.5 + eps, -2.0) - y(0.5 - eps, -2.0)) / (2 * eps)
    dw = (y(0.5, -2.0 + eps) - y(0.5, -2.0 - eps)) / (2 * eps)
    assert math.isclose(x.grad, dx, rel_tol=1e-6) and math.isclose(w.grad, dw, rel_tol=1e-6)
    assert printed.split() == [repr(x.grad), repr(w.grad)]


def test_the_second_is_the_same_graph_on_minitorchs_tensor_with_the_same_gradients():
    mechanism, _ = run(BLOCKS[0])
    tensors, printed = run(BLOCKS[1])
    assert "import minitorch as mt" in BLOCKS[1] and "y.backward()" in BLOCKS[1]
    assert math.isclose(tensors["x"].grad.item(), mechanism["x"].grad, rel_tol=1e-12)
    assert math.isclose(tensors["w"].grad.item(), mechanism["w"].grad, rel_tol=1e-12)
    assert printed.count("tensor(") == 2
