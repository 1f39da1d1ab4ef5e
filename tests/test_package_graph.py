"""The layers import one way (train -> transformer -> minitorch), train/ has no import cycle, and train/'s sub-packages
follow the pipeline (data -> loop -> commands): read from the source with ast, so a wrong import fails here before it
confuses a reader."""
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


def find_cycle(edges):
    """Raise AssertionError naming an import cycle of `edges` (module -> modules it imports), if there is one."""
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


def package_edges(top):
    """The import graph among top's modules; a package's __init__ re-exporting its submodules is not a cycle."""
    edges = {m: {t for t in ts if t.startswith(top)} for m, ts in graph().items() if m.startswith(top)}
    return {m: {t for t in ts if not (m.startswith(t + ".") or t.startswith(m + "."))} for m, ts in edges.items()}


def test_train_has_no_import_cycle():
    find_cycle(package_edges("train"))


def test_minitorch_has_no_import_cycle():
    """No module of the engine imports (at any depth, lazily too) a module that imports it back."""
    find_cycle(package_edges("minitorch"))


def test_minitorch_packages_have_no_import_cycle():
    """Folders too: core, ops, tensor, fused, kernels, ... form layers, each importing only those below it."""
    def folder(module):
        parts = module.split(".")
        return ".".join(parts[:2]) if len(parts) > 1 else module
    edges = {}
    for m, ts in package_edges("minitorch").items():
        if m != "minitorch":
            edges.setdefault(folder(m), set()).update(
                folder(t) for t in ts if folder(t) not in (folder(m), "minitorch"))
    find_cycle(edges)


def test_the_engine_core_imports_neither_tensor_nor_the_ops():
    """Function and the graph walk (minitorch/core) know values only as Nodes: nothing above them is imported."""
    for module, targets in package_edges("minitorch").items():
        if module.startswith("minitorch.core"):
            above = {t for t in targets if not t.startswith("minitorch.core") and t != "minitorch.backend"}
            assert not above, f"{module} imports {sorted(above)}"


# train/'s packages in layer order; a module may import its own package and the packages before it. train/'s top
# level holds only packages, __init__.py and __main__.py (the entry point, which lists the commands).
GROUPS = ("cli", "data", "run", "evaluation", "loop", "commands")
# what each package is for: these modules must sit in it
MEMBERS = {"cli": {"errors", "prog", "arguments", "parallel", "progress"},
           "data": {"corpus", "download", "demo_corpus", "pairs", "encoding", "tokenizer", "batching",
                    "training_pairs"},
           "run": {"presets", "settings", "config", "resolve", "run_folder", "lock", "checkpoint", "threads"},
           "evaluation": {"decode", "metrics", "ensemble", "arguments"},
           "loop": {"step", "trainer", "assemble", "validation", "training_state", "stopping"},
           "commands": {"fit", "evaluate", "translate", "plot", "check_gpu", "bench", "experiments"}}


def group(module):
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in GROUPS else None


def test_train_groups_hold_the_pipeline_parts():
    for name, members in MEMBERS.items():
        present = {p.stem if p.name != "__init__.py" else p.parent.name
                   for p in (ROOT / name.join(("train/", ""))).glob("*")
                   if p.suffix == ".py" or (p / "__init__.py").is_file()}
        assert members <= present, f"train/{name}/ lacks {sorted(members - present)}"


def test_train_top_level_holds_only_packages_init_and_main():
    top = {p.name for p in (ROOT / "train").iterdir() if p.name != "__pycache__"}
    assert top == {"__init__.py", "__main__.py", *GROUPS}, sorted(top)
    assert all((ROOT / "train" / g / "__init__.py").is_file() for g in GROUPS)


def test_train_groups_import_in_pipeline_order():
    rank = {g: i for i, g in enumerate(GROUPS)}
    for module, targets in graph().items():
        if not module.startswith("train"):
            continue
        for target in (t for t in targets if t.startswith("train") and t != "train"):
            mine, theirs = group(module), group(target)
            assert theirs is not None, f"{module} imports {target}, outside train/'s packages"
            if mine is None:   # train/__init__ and the entry point, train/__main__
                assert module in ("train", "train.__main__"), module
            else:
                assert rank[theirs] <= rank[mine], f"{module} imports {target} (a later package)"


def test_train_packages_have_no_import_cycle():
    """The packages as a whole (cli, data, run, ...) import one another without a cycle, lazy imports too."""
    edges = {}
    for m, ts in package_edges("train").items():
        if group(m):
            edges.setdefault(group(m), set()).update(group(t) for t in ts if group(t) not in (group(m), None))
    find_cycle(edges)


def test_every_command_of_the_cli_is_in_commands():
    from train.__main__ import COMMANDS
    assert all(m.__name__.startswith("train.commands.") for m in COMMANDS.values())


def test_the_engines_distributed_errors_know_nothing_of_the_cli():
    """minitorch.distributed's messages say what is wrong in the library's terms; train/cli/parallel.py adds the CLI's
    flags (--distributed) and the project's extras (pip install -e '.[dist]')."""
    import re
    cli = re.compile(r"(^|\s)--[a-z]|python3? -m train|\.\[[a-z]+\]")
    for path in (ROOT / "minitorch" / "distributed").glob("*.py"):
        tree = ast.parse(path.read_text())
        texts = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
        found = [t for t in texts if cli.search(t)]
        assert not found, f"{path.name}: {found}"


def test_only_the_data_package_and_the_commands_fetch_or_make_corpora():
    """run/resolve.py resolves a run's settings; where its corpus comes from is data/corpus.py's (prepare_corpus)."""
    makers = {"train.data.download", "train.data.demo_corpus"}
    for module, targets in graph().items():
        if module.startswith("train") and targets & makers:
            assert group(module) in ("data", "commands"), f"{module} imports {sorted(targets & makers)}"
