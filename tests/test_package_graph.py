"""The layers import one way (train -> transformer -> minitorch) and train/ has no import cycle: read from the source
with ast, so a wrong import fails here before it confuses a reader."""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("minitorch", "transformer", "train")
LAYER = {"minitorch": 0, "transformer": 1, "train": 2}


def module_name(path):
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path):
    """The project modules a file imports (absolute names), at any depth of the file (function-level too)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([node.module] if node.module else []))
            found.add(base)
            found.update(f"{base}.{a.name}" for a in node.names)
    return {m for m in found if m.split(".")[0] in PACKAGES}


def graph():
    modules = {module_name(p): p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")}
    return {m: {i for i in imports(p) if i in modules and i != m} for m, p in modules.items()}


def test_layers_import_downward_only():
    for module, targets in graph().items():
        for target in targets:
            assert LAYER[target.split(".")[0]] <= LAYER[module.split(".")[0]], f"{module} imports {target} (upward)"


def test_train_has_no_import_cycle():
    edges = {m: {t for t in ts if t.startswith("train")} for m, ts in graph().items() if m.startswith("train")}
    # a package's __init__ that re-exports its submodules is not a cycle with them
    edges = {m: {t for t in ts if not (m.startswith(t + ".") or t.startswith(m + "."))} for m, ts in edges.items()}
    state = {}

    def visit(node, path):
        state[node] = "open"
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == "open":
                raise AssertionError("import cycle: " + " -> ".join(path + [node, nxt]))
            if nxt not in state:
                visit(nxt, path + [node])
        state[node] = "done"

    for node in sorted(edges):
        if node not in state:
            visit(node, [])


def test_no_file_in_train_is_over_300_lines():
    long = {str(p.relative_to(ROOT)): n for p in (ROOT / "train").rglob("*.py")
            if (n := len(p.read_text().splitlines())) > 300}
    assert not long, long
