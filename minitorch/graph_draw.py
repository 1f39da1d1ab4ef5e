"""Draw the graph that produced a tensor: Graphviz DOT text, rendered to SVG/PNG/PDF when Graphviz is installed.

One node per op (its name, the output's shape and dtype, the bytes it saved for backward) and one per leaf (named
when the caller names it, e.g. with a model's named_parameters). Edges run the way the values flow, from an input
to the op that uses it; with grads=True each edge is labelled with the norm of the gradient that flows back along
it. Tensors that need no gradient (an input batch, a mask) are drawn as grey constants; numbers are left out.
"""
import os
import shutil

from . import backend
from .autograd import FREED, _topological_order, unbroadcast
from .graph_memory import op_saved_bytes
from .tensor import Tensor

RENDERED = ("svg", "png", "pdf")
INSTALL = ("the graphviz Python package (pip install graphviz, or pip install -e '.[draw]') and Graphviz's dot "
           "program (apt-get install graphviz on Debian/Ubuntu, brew install graphviz on macOS, or conda install "
           "graphviz)")


def draw_graph(tensor, path=None, names=None, grads=False, grad_output=None):
    """Write the graph that produced `tensor` to `path` and return its DOT text.

    path: *.dot or *.gv for the DOT text; *.svg, *.png or *.pdf for a picture (the DOT text is written beside it as
    *.dot); None to write nothing. names: {name: tensor}, (name, tensor) pairs or a Module (its named_parameters),
    to label leaves. grads=True labels each edge with the norm of the gradient of `tensor` (weighted by
    grad_output, needed unless `tensor` is a scalar) flowing along it: draw before backward, or after
    backward(retain_graph=True).
    """
    if not isinstance(tensor, Tensor):
        raise TypeError(f"draw_graph: tensor must be a Tensor, got {type(tensor).__name__}")
    if not tensor.requires_grad:
        raise ValueError("draw_graph: this tensor has no graph (nothing it was computed from requires grad)")
    order = _topological_order([tensor])
    if any(t._op is FREED for t in order):
        raise RuntimeError("draw_graph: the graph was released by backward(); call backward(retain_graph=True) "
                           "to draw it afterwards, or draw it before backward")
    edge_norms = _edge_gradient_norms(tensor, order, grad_output) if grads else {}
    source = _dot(tensor, order, _leaf_names(names), edge_norms)
    if path is not None:
        _write(source, os.fspath(path))
    return source


def _leaf_names(names):
    if names is None:
        return {}
    if hasattr(names, "named_parameters"):
        names = names.named_parameters()
    pairs = names.items() if isinstance(names, dict) else names
    return {id(t): name for name, t in pairs}


def _dot(root, order, names, edge_norms):
    constants = {id(p): p for t in order if t._op is not None for p in t._op.parents
                 if isinstance(p, Tensor) and not p.requires_grad}
    nodes = order + list(constants.values())
    ids = {id(t): f"n{i}" for i, t in enumerate(nodes)}
    lines = ["digraph minitorch {", '  rankdir="TB";', '  node [fontname="Helvetica", fontsize=10];',
             '  edge [fontname="Helvetica", fontsize=9];']
    for t in nodes:
        what = f"{t.shape} {t.dtype}"
        if t._op is None:  # a leaf: a parameter or an input that requires grad (blue), or a constant (grey)
            name = names.get(id(t)) or ("leaf" if t.requires_grad else "constant")
            color = "lightblue" if t.requires_grad else "gray92"
            label = _escape(name + "\n" + what)
            lines.append(f'  {ids[id(t)]} [label="{label}", shape=box, style=filled, fillcolor={color}];')
            continue
        name = type(t._op).__name__ if id(t) not in names else f"{names[id(t)]} = {type(t._op).__name__}"
        label = f"{name}\n{what}\nsaved {_size(op_saved_bytes(t._op))}"
        extra = ", style=filled, fillcolor=gold" if t is root else ""
        lines.append(f'  {ids[id(t)]} [label="{_escape(label)}", shape=ellipse{extra}];')
    for t in order:
        if t._op is None:
            continue
        for k, parent in enumerate(t._op.parents):
            if isinstance(parent, Tensor) and id(parent) in ids:
                norm = edge_norms.get((id(t), k))
                label = f' [label="|g| {norm:.3g}"]' if norm is not None else ""
                lines.append(f"  {ids[id(parent)]} -> {ids[id(t)]}{label};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _edge_gradient_norms(root, order, grad_output):
    """{(id of an op's output, input position): norm of the gradient sent to that input} for one backward of root."""
    xp = backend.xp_of(root.data)
    if grad_output is None:
        if root.size != 1:
            raise ValueError(f"draw_graph: grads=True on a tensor of shape {root.shape} needs grad_output")
        g = xp.ones_like(root.data)
    else:
        g = grad_output.data if isinstance(grad_output, Tensor) else xp.asarray(grad_output, dtype=root.dtype)
    grads, norms = {id(root): g}, {}
    for node in order:
        g = grads.pop(id(node), None)
        op = node._op
        if g is None or op is None:
            continue
        op.retain_graph = True  # the graph stays: backward must not write into its saved arrays
        input_grads = op.backward(g)
        for k, (parent, pg) in enumerate(zip(op.parents, input_grads if isinstance(input_grads, tuple)
                                             else (input_grads,))):
            if pg is None or not isinstance(parent, Tensor) or not parent.requires_grad:
                continue
            pg = unbroadcast(pg, parent.shape)
            norms[(id(node), k)] = float(backend.to_numpy(backend.xp_of(pg).linalg.norm(pg.reshape(-1))))
            grads[id(parent)] = pg if id(parent) not in grads else grads[id(parent)] + pg
    return norms


def _write(source, path):
    stem, ext = os.path.splitext(path)
    fmt = ext.lower().lstrip(".")
    if fmt in ("dot", "gv"):
        with open(path, "w") as f:
            f.write(source)
        return
    if fmt not in RENDERED:
        raise ValueError(f"draw_graph: path must end in .dot, .gv, .svg, .png or .pdf, got {path!r}")
    dot_path = stem + ".dot"
    with open(dot_path, "w") as f:
        f.write(source)
    try:
        import graphviz
    except ImportError:
        raise RuntimeError(f"draw_graph: drawing a .{fmt} needs {INSTALL}; the graphviz package is missing. "
                           f"The DOT text was written to {dot_path}") from None
    if shutil.which("dot") is None:
        raise RuntimeError(f"draw_graph: drawing a .{fmt} needs {INSTALL}; the dot program is not on PATH. "
                           f"The DOT text was written to {dot_path}")
    with open(path, "wb") as f:
        f.write(graphviz.Source(source).pipe(format=fmt))


def _escape(text):
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _size(n):
    for unit in ("B", "KiB", "MiB"):
        if n < 1024 or unit == "MiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024


__all__ = ["draw_graph"]
