"""Draw the graph that produced a tensor: Graphviz DOT text, rendered to SVG/PNG/PDF by Graphviz where it is
installed and by matplotlib (a project dependency) where it is not.

One node per op (its name, the output's shape and dtype, the bytes it saved for backward) and one per leaf (named
when the caller names it, e.g. with a model's named_parameters). Edges run the way the values flow, from an input
to the op that uses it; with grads=True each edge is labelled with the norm of the gradient that flows back along
it. Tensors that need no gradient (an input batch, a mask) are drawn as grey constants; numbers are left out.
"""
import os
import shutil

from .. import backend
from ..core import FREED, Constant, Function, unbroadcast
from ..tensor import Tensor
from .graph_memory import op_saved_bytes

RENDERED = ("svg", "png", "pdf")
RENDERERS = ("auto", "graphviz", "matplotlib")
INSTALL = ("the graphviz Python package (pip install graphviz, or pip install -e '.[draw]') and Graphviz's dot "
           "program (apt-get install graphviz on Debian/Ubuntu, brew install graphviz on macOS, or conda install "
           "graphviz)")


def draw_graph(tensor, path=None, names=None, grads=False, grad_output=None, renderer="auto"):
    """Write the graph that produced `tensor` to `path` and return its DOT text.

    path: *.dot or *.gv for the DOT text; *.svg, *.png or *.pdf for a picture (the DOT text is written beside it as
    *.dot), drawn by `renderer`: "graphviz", "matplotlib", or "auto" (Graphviz where its Python package and dot
    program are installed, else matplotlib); None to write nothing. names: {name: tensor}, (name, tensor) pairs or
    a Module (its named_parameters), to label leaves. grads=True labels each edge with the norm of the gradient of
    `tensor` (weighted by grad_output, needed unless `tensor` is a scalar) flowing along it: draw before backward,
    or after backward(retain_graph=True).
    """
    if not isinstance(tensor, Tensor):
        raise TypeError(f"draw_graph: tensor must be a Tensor, got {type(tensor).__name__}")
    if not tensor.requires_grad:
        raise ValueError("draw_graph: this tensor has no graph (nothing it was computed from requires grad)")
    if renderer not in RENDERERS:
        raise ValueError(f"draw_graph: renderer must be one of {RENDERERS}, got {renderer!r}")
    order = backward_order(tensor)
    if any(isinstance(node, Function) and node.saved_tensors is FREED for node in order):
        raise RuntimeError("draw_graph: the graph was released by backward(); call backward(retain_graph=True) "
                           "to draw it afterwards, or draw it before backward")
    edge_norms = _edge_gradient_norms(tensor, order, grad_output) if grads else {}
    nodes, edges = _layout_graph(tensor, order, _leaf_names(names), edge_norms)
    source = _dot(nodes, edges)
    if path is not None:
        _write(source, os.fspath(path), renderer, nodes, edges)
    return source


def backward_order(tensor):
    """The graph nodes that produced `tensor` (its ops, and the leaves that require grad), in the order a backward
    pass reaches them: `tensor`'s first, and each node only after every node computed from it (so its gradient is
    complete)."""
    root = _node(tensor)
    uses, stack, seen = {}, [root], {id(root)}
    while stack:  # count, for each node, the ops of the graph that take it as an input
        for parent in _inputs(stack.pop()):
            uses[id(parent)] = uses.get(id(parent), 0) + 1
            if id(parent) not in seen:
                seen.add(id(parent))
                stack.append(parent)
    order, ready = [], [root]
    while ready:  # a node is ready once every use has been walked (Kahn's algorithm)
        node = ready.pop()
        order.append(node)
        for parent in _inputs(node):
            uses[id(parent)] -= 1
            if uses[id(parent)] == 0:
                ready.append(parent)
    return order


def _node(t):
    """A tensor's node in the graph: the op that made it, or the tensor itself for a leaf."""
    return t._op or t


def _inputs(node):
    """The graph nodes of the inputs of op `node` that require grad (a tensor used twice is listed twice)."""
    if not isinstance(node, Function):
        return []
    return [p for p, needs_grad in zip(node.parents, node.needs_input_grad) if needs_grad]


def _leaf_names(names):
    if names is None:
        return {}
    if hasattr(names, "named_parameters"):
        names = names.named_parameters()
    pairs = names.items() if isinstance(names, dict) else names
    return {id(_node(t)): name for name, t in pairs}


def _layout_graph(root, order, names, edge_norms):
    """(nodes, edges): nodes as (id, label, kind) with kind "op", "root", "leaf" or "constant"; edges as (from id,
    to id, label or None), from an input to the op that uses it."""
    constants = {id(p): p for node in order if isinstance(node, Function)
                 for p, needs_grad in zip(node.parents, node.needs_input_grad) if isinstance(p, Constant)
                 and not needs_grad}
    everything = order + list(constants.values())
    ids = {id(node): f"n{i}" for i, node in enumerate(everything)}
    nodes = []
    for node in everything:
        what = f"{tuple(node.out_shape)} {node.out_dtype}"
        if not isinstance(node, Function):  # a leaf: a parameter or an input that requires grad, or a constant
            name = names.get(id(node)) or ("leaf" if node.requires_grad else "constant")
            nodes.append((ids[id(node)], name + "\n" + what, "leaf" if node.requires_grad else "constant"))
            continue
        name = type(node).__name__ if id(node) not in names else f"{names[id(node)]} = {type(node).__name__}"
        label = f"{name}\n{what}\nsaved {_size(op_saved_bytes(node))}"
        nodes.append((ids[id(node)], label, "root" if node is _node(root) else "op"))
    edges = []
    for node in reversed(order):  # inputs before the ops that use them, as the values flow
        if not isinstance(node, Function):
            continue
        for k, parent in enumerate(node.parents):
            if isinstance(parent, (Tensor, Function, Constant)) and id(parent) in ids:
                norm = edge_norms.get((id(node), k))
                edges.append((ids[id(parent)], ids[id(node)], None if norm is None else f"|g| {norm:.3g}"))
    return nodes, edges


STYLE = {"op": "shape=ellipse", "root": "shape=ellipse, style=filled, fillcolor=gold",
         "leaf": "shape=box, style=filled, fillcolor=lightblue",
         "constant": "shape=box, style=filled, fillcolor=gray92"}


def _dot(nodes, edges):
    lines = ["digraph minitorch {", '  rankdir="TB";', '  node [fontname="Helvetica", fontsize=10];',
             '  edge [fontname="Helvetica", fontsize=9];']
    lines += [f'  {node} [label="{_escape(label)}", {STYLE[kind]}];' for node, label, kind in nodes]
    lines += [f"  {a} -> {b}" + (f' [label="{label}"]' if label else "") + ";" for a, b, label in edges]
    lines.append("}")
    return "\n".join(lines) + "\n"


def _edge_gradient_norms(root, order, grad_output):
    """{(id of an op node, input position): norm of the gradient sent to that input} for one backward of root."""
    xp = backend.xp_of(root.data)
    if grad_output is None:
        if root.numel() != 1:
            raise ValueError(f"draw_graph: grads=True on a tensor of shape {root.shape} needs grad_output")
        g = xp.ones_like(root.data)
    else:
        g = grad_output.data if isinstance(grad_output, Tensor) else xp.asarray(grad_output, dtype=root.dtype)
    grads, norms = {id(_node(root)): g}, {}
    for node in order:
        g = grads.pop(id(node), None)
        if g is None or not isinstance(node, Function):
            continue
        input_grads = node.backward(g)
        for k, (parent, pg, needs_grad) in enumerate(zip(node.parents, input_grads if isinstance(input_grads, tuple)
                                                          else (input_grads,), node.needs_input_grad)):
            if pg is None or not needs_grad:
                continue
            pg = unbroadcast(pg, parent.out_shape)
            norms[(id(node), k)] = float(backend.to_numpy(backend.xp_of(pg).linalg.norm(pg.reshape(-1))))
            grads[id(parent)] = pg if id(parent) not in grads else grads[id(parent)] + pg
    return norms


def _write(source, path, renderer, nodes, edges):
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
    if renderer == "auto":
        renderer = "graphviz" if _graphviz_installed() else "matplotlib"
    if renderer == "matplotlib":
        _draw_with_matplotlib(nodes, edges, path, fmt)
        return
    try:
        import graphviz
    except ImportError:
        raise RuntimeError(f"draw_graph: drawing a .{fmt} with Graphviz needs {INSTALL}; the graphviz package is "
                           f"missing (renderer='matplotlib' needs neither). The DOT text was written to "
                           f"{dot_path}") from None
    if shutil.which("dot") is None:
        raise RuntimeError(f"draw_graph: drawing a .{fmt} with Graphviz needs {INSTALL}; the dot program is not on "
                           f"PATH (renderer='matplotlib' needs neither). The DOT text was written to {dot_path}")
    with open(path, "wb") as f:
        f.write(graphviz.Source(source).pipe(format=fmt))


def _graphviz_installed():
    try:
        import graphviz  # noqa: F401
    except ImportError:
        return False
    return shutil.which("dot") is not None


COLORS = {"op": "white", "root": "gold", "leaf": "lightblue", "constant": "#ebebeb"}


def _draw_with_matplotlib(nodes, edges, path, fmt):
    """The same graph drawn by matplotlib: one row per depth (inputs at the top, the output at the bottom), each input
    just above its first use, and the nodes of a row ordered by the mean position of their neighbours."""
    import matplotlib
    from matplotlib.figure import Figure
    rank = {node: 0 for node, _, _ in nodes}
    for a, b, _ in edges:  # edges run inputs first, so each input's depth is final before it is used
        rank[b] = max(rank[b], rank[a] + 1)
    neighbours, has_input = {node: [] for node in rank}, {b for _, b, _ in edges}
    for a, b, _ in edges:
        neighbours[a].append(b)
        neighbours[b].append(a)
    for node in rank:  # a leaf or constant: one row above the first op that uses it
        if node not in has_input and neighbours[node]:
            rank[node] = min(rank[n] for n in neighbours[node]) - 1
    rows = {}
    for node in rank:
        rows.setdefault(rank[node], []).append(node)
    x = {node: i for row in rows.values() for i, node in enumerate(row)}
    for sweep in range(4):  # barycentre sweeps, down then up: fewer crossings
        for depth in sorted(rows, reverse=sweep % 2 == 1):
            row = sorted(rows[depth], key=lambda n: sum(x[m] for m in neighbours[n]) / len(neighbours[n])
                         if neighbours[n] else x[n])
            rows[depth] = row
            for i, node in enumerate(row):
                x[node] = i - (len(row) - 1) / 2
    width, height = max(len(r) for r in rows.values()), max(rank.values()) + 1
    with matplotlib.rc_context({"svg.fonttype": "none"}):  # labels stay text in an SVG
        fig = Figure(figsize=(max(3.0, 2.3 * width), max(1.5, 1.15 * height)))
        ax = fig.subplots()
        boxes = {}
        for node, label, kind in nodes:
            style = "round,pad=0.4" if kind in ("op", "root") else "square,pad=0.4"
            boxes[node] = ax.text(x[node], -rank[node], label, ha="center", va="center", fontsize=8,
                                  bbox={"boxstyle": style, "facecolor": COLORS[kind], "edgecolor": "black"})
        for a, b, label in edges:
            ax.annotate("", xy=(x[b], -rank[b]), xytext=(x[a], -rank[a]),
                        arrowprops={"arrowstyle": "-|>", "color": "dimgray", "patchA": boxes[a].get_bbox_patch(),
                                    "patchB": boxes[b].get_bbox_patch(), "shrinkA": 2, "shrinkB": 2})
            if label:
                ax.text((x[a] + x[b]) / 2, -(rank[a] + rank[b]) / 2, label, fontsize=7, color="dimgray",
                        ha="center", va="center", bbox={"facecolor": "white", "edgecolor": "none", "pad": 0.5})
        ax.set_xlim(-width / 2, width / 2)
        ax.set_ylim(-height + 0.5, 0.5)
        ax.axis("off")
        fig.savefig(path, format=fmt, bbox_inches="tight")


def _escape(text):
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _size(n):
    for unit in ("B", "KiB", "MiB"):
        if n < 1024 or unit == "MiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024


__all__ = ["draw_graph", "backward_order"]
