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


def test_no_file_in_train_is_over_300_lines():
    long = {str(p.relative_to(ROOT)): n for p in (ROOT / "train").rglob("*.py")
            if (n := len(p.read_text().splitlines())) > 300}
    assert not long, long


# train/'s sub-packages in pipeline order; a module may import its own group and the groups before it. The modules
# directly in train/ (errors, presets, arguments, threads, run, settings, parallel, decode, metrics, progress) are the
# pieces several groups share: they may import data/ and loop/, never commands/.
GROUPS = ("data", "loop", "commands")
# what each group is for: these modules must sit in it
MEMBERS = {"data": {"corpus", "download", "demo_corpus", "pairs", "tokenizer", "batching"},
           "loop": {"step", "trainer", "validation", "training_state", "checkpoint", "stopping"},
           "commands": {"fit", "evaluate", "translate", "plot", "check_gpu", "bench", "experiments"}}


def group(module):
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in GROUPS else None


def test_train_groups_hold_the_pipeline_parts():
    for name, members in MEMBERS.items():
        present = {p.stem if p.name != "__init__.py" else p.parent.name
                   for p in (ROOT / "train" / name).glob("*") if p.suffix == ".py" or (p / "__init__.py").is_file()}
        assert members <= present, f"train/{name}/ lacks {sorted(members - present)}"
    assert not [p.name for p in (ROOT / "train").glob("*.py") if p.stem in set().union(*MEMBERS.values())]


def test_train_groups_import_in_pipeline_order():
    rank = {g: i for i, g in enumerate(GROUPS)}
    for module, targets in graph().items():
        if not module.startswith("train"):
            continue
        for target in (t for t in targets if t.startswith("train")):
            mine, theirs = group(module), group(target)
            if theirs is None:
                # data/ is the start of the pipeline: of the shared modules it may use the errors and the CLI's name
                assert mine != "data" or target in ("train", "train.errors", "train.prog"), f"{module} imports {target}"
                continue
            if mine is None:   # a shared module: not the commands (except the CLI's entry point, which lists them)
                assert theirs != "commands" or module == "train.__main__", f"{module} imports {target} (a command)"
            else:
                assert rank[theirs] <= rank[mine], f"{module} imports {target} (later in the pipeline)"


def test_every_command_of_the_cli_is_in_commands():
    from train.__main__ import COMMANDS
    assert all(m.__name__.startswith("train.commands.") for m in COMMANDS.values())


def test_the_engines_distributed_errors_know_nothing_of_the_cli():
    """minitorch.distributed's messages say what is wrong in the library's terms; train/parallel.py adds the CLI's
    flags (--distributed) and the project's extras (pip install -e '.[dist]')."""
    import re
    cli = re.compile(r"(^|\s)--[a-z]|python3? -m train|\.\[[a-z]+\]")
    for path in (ROOT / "minitorch" / "distributed").glob("*.py"):
        tree = ast.parse(path.read_text())
        texts = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
        found = [t for t in texts if cli.search(t)]
        assert not found, f"{path.name}: {found}"


def test_only_the_data_package_and_the_commands_fetch_or_make_corpora():
    """settings.py resolves a run's settings; where its corpus comes from is data/prepare.py's."""
    makers = {"train.data.download", "train.data.demo_corpus"}
    for module, targets in graph().items():
        if module.startswith("train") and targets & makers:
            assert group(module) in ("data", "commands"), f"{module} imports {sorted(targets & makers)}"
