"""mt.draw_graph: the DOT text (nodes, edges, labels, names, gradient norms), rendering, and its error messages."""
import re
import shutil
import sys

import numpy as np
import pytest

import minitorch as mt
from minitorch import nn


def f64(values, requires_grad=True):
    return mt.tensor(values, dtype=np.float64, requires_grad=requires_grad)


def nodes(dot):
    """{node id: label} from DOT text."""
    found = re.finditer(r'^\s+(n\d+) \[label="([^"]*)"', dot, re.M)
    return {m.group(1): m.group(2).replace("\\n", "\n") for m in found}


def edges(dot):
    """[(from label's first line, to label's first line, edge label or None)]."""
    names = {k: v.split("\n")[0] for k, v in nodes(dot).items()}
    return [(names[a], names[b], label or None) for a, b, label in
            re.findall(r'^\s+(n\d+) -> (n\d+)(?: \[label="([^"]*)"\])?;', dot, re.M)]


def test_one_node_per_op_and_leaf_with_shape_dtype_and_saved_bytes(tmp_path):
    a, b = f64([3.0, 4.0]), f64([1.0, 2.0])
    y = (a * b).sum()
    dot = mt.draw_graph(y, tmp_path / "g.dot", names={"a": a, "b": b})
    assert (tmp_path / "g.dot").read_text() == dot
    assert dot.startswith("digraph") and dot.rstrip().endswith("}")
    labels = sorted(nodes(dot).values())
    assert labels == ["Mul\n(2,) float64\nsaved 32 B",  # a and b, 16 bytes each
                      "Sum\n() float64\nsaved 0 B",
                      "a\n(2,) float64", "b\n(2,) float64"]
    assert sorted(e[:2] for e in edges(dot)) == [("Mul", "Sum"), ("a", "Mul"), ("b", "Mul")]
    assert all(label is None for *_, label in edges(dot))  # no gradient norms unless asked


def test_a_tensor_used_twice_gives_two_edges_and_unnamed_leaves_and_constants_are_marked():
    x = f64([1.0, 2.0])
    c = f64([5.0, 6.0], requires_grad=False)
    dot = mt.draw_graph((x * x + c).sum())
    assert [e[:2] for e in edges(dot)].count(("leaf", "Mul")) == 2
    assert ("constant", "Add") in [e[:2] for e in edges(dot)]
    assert 'fillcolor=gray92' in dot and 'fillcolor=lightblue' in dot


def test_edges_carry_the_norm_of_the_gradient_flowing_along_them():
    a, b = f64([3.0, 4.0]), f64([1.0, 2.0])
    y = (a * b).sum()
    y.backward(retain_graph=True)  # drawn after backward: the graph was kept
    dot = mt.draw_graph(y, names={"a": a, "b": b}, grads=True)
    norms = {(src, dst): float(label.split()[-1]) for src, dst, label in edges(dot)}
    assert norms[("a", "Mul")] == pytest.approx(np.sqrt(5.0), rel=5e-3)     # dy/da = b
    assert norms[("b", "Mul")] == pytest.approx(5.0, rel=5e-3)              # dy/db = a
    assert norms[("Mul", "Sum")] == pytest.approx(np.sqrt(2.0), rel=5e-3)   # ones
    np.testing.assert_array_equal(a.grad.numpy(), [1.0, 2.0])               # drawing left .grad alone


def test_broadcast_edges_are_summed_back_and_grad_output_weights_them():
    x, bias = f64([[1.0, 2.0], [3.0, 4.0]]), f64([0.5, 0.5])
    y = x + bias
    dot = mt.draw_graph(y, names={"x": x, "bias": bias}, grads=True, grad_output=np.array([[1.0, 0.0], [1.0, 0.0]]))
    norms = {(src, dst): float(label.split()[-1]) for src, dst, label in edges(dot)}
    assert norms[("bias", "Add")] == pytest.approx(2.0)  # [2, 0] after summing over the broadcast rows
    assert norms[("x", "Add")] == pytest.approx(np.sqrt(2.0), rel=5e-3)
    with pytest.raises(ValueError, match=r"grad_output"):
        mt.draw_graph(y, grads=True)


def test_a_named_intermediate_tensor_keeps_its_op_in_the_label():
    x = f64([1.0, 2.0])
    h = x.exp()
    dot = mt.draw_graph((h * 2).sum(), names={"x": x, "h": h})
    assert "h = Exp\n(2,) float64\nsaved 16 B" in nodes(dot).values()


def test_a_model_names_its_parameters():
    model = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    dot = mt.draw_graph(model(mt.tensor([[1.0, 2.0]])).sum(), names=model)
    labels = {v.split("\n")[0] for v in nodes(dot).values()}
    assert {"0.weight", "0.bias", "2.weight", "2.bias", "Linear", "Relu", "Sum"} <= labels


def test_clear_errors():
    x = f64([1.0, 2.0])
    y = (x * 2).sum()
    y.backward()
    with pytest.raises(RuntimeError, match=r"released.*retain_graph=True"):
        mt.draw_graph(y)
    with pytest.raises(ValueError, match="no graph"):
        mt.draw_graph(f64([1.0], requires_grad=False) * 2)
    with pytest.raises(TypeError, match="must be a Tensor"):
        mt.draw_graph(np.ones(2))
    with pytest.raises(ValueError, match=r"\.dot, \.gv, \.svg, \.png or \.pdf"):
        mt.draw_graph((x * 2).sum(), "graph.txt")


def test_graphviz_asked_for_but_missing_names_what_to_install_and_the_dot_text_is_kept(tmp_path, monkeypatch):
    y = (f64([1.0, 2.0]) * 2).sum()
    monkeypatch.setitem(sys.modules, "graphviz", None)  # import graphviz -> ImportError
    with pytest.raises(RuntimeError, match=r"pip install graphviz.*apt-get install graphviz"):
        mt.draw_graph(y, tmp_path / "g.svg", renderer="graphviz")
    assert (tmp_path / "g.dot").read_text().startswith("digraph")
    monkeypatch.delitem(sys.modules, "graphviz")
    monkeypatch.setattr(shutil, "which", lambda name: None)
    pytest.importorskip("graphviz", reason="the graphviz Python package is not installed")
    with pytest.raises(RuntimeError, match=r"dot program is not on PATH"):
        mt.draw_graph(y, tmp_path / "g.png", renderer="graphviz")


def test_renders_svg_and_png_where_graphviz_is_installed(tmp_path):
    pytest.importorskip("graphviz", reason="the graphviz Python package is not installed (pip install graphviz)")
    if shutil.which("dot") is None:
        pytest.skip("Graphviz's dot program is not installed (apt-get install graphviz)")
    x = f64([[1.0, -2.0]])
    y = (x @ f64([[0.5], [1.5]])).tanh().sum()
    mt.draw_graph(y, tmp_path / "g.svg", names={"x": x})
    svg = (tmp_path / "g.svg").read_text()
    assert "<svg" in svg and "MatMul" in svg and "Tanh" in svg
    mt.draw_graph(y, tmp_path / "g.png", grads=True)
    assert (tmp_path / "g.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_without_dot_the_picture_is_drawn_by_matplotlib(tmp_path, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)  # no dot program: "auto" falls back to matplotlib
    x = f64([[1.0, -2.0]])
    w = f64([[0.5], [1.5]])
    y = (x @ w).tanh().sum()
    mt.draw_graph(y, tmp_path / "g.svg", names={"x": x, "w": w}, grads=True)
    svg = (tmp_path / "g.svg").read_text()
    assert "<svg" in svg and "Graphviz" not in svg
    for text in ("MatMul", "Tanh", "Sum", "x", "w", "saved 32 B", "|g| "):  # every node's label and the edge norms
        assert text in svg, text
    assert (tmp_path / "g.dot").read_text().startswith("digraph")
    mt.draw_graph(y, tmp_path / "g.png", renderer="matplotlib")
    assert (tmp_path / "g.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(ValueError, match="renderer must be one of"):
        mt.draw_graph(y, tmp_path / "g.png", renderer="dot")


def test_backward_order_puts_each_tensor_after_every_tensor_computed_from_it():
    x = f64([1.0, 2.0])
    a = x.exp()
    b = a * x          # x is used twice: by exp and by this product
    y = (b + a).sum()
    order = mt.tools.graph_draw.backward_order(y)   # graph nodes: the ops, and the leaf x itself
    position = {id(node): i for i, node in enumerate(order)}
    assert order[0] is y._op and len(order) == 5  # y's sum, the add, b's product, a's exp, x: each once
    for node in order:
        for parent, needs_grad in zip(getattr(node, "parents", ()), getattr(node, "needs_input_grad", ())):
            if needs_grad:
                assert position[id(node)] < position[id(parent)]
    assert position[id(x)] == 4 and position[id(b._op)] < position[id(a._op)]
