"""Write cupy_names.json: the public names of one CuPy release, read from CuPy's own source.

    python tests/cupy_standin/make_lists.py CUPY_GIT_CHECKOUT v14.2.0

The stand-in (tests/cupy_standin/cupy) offers a name only where this list says the real CuPy has it, so a call that
would fail with AttributeError on a GPU fails the same way in CI. Nothing is imported from CuPy (it needs CUDA to
import): module namespaces come from the `ast` of their __init__.py, the Cython classes (ndarray, ufunc, Generator)
from their `def`/`cpdef`/`property` lines and the `readonly` fields of core.pxd. The parameters of each `cupy.X`
function and `ndarray` method ("signatures") come from the `def` that defines it, followed from cupy/__init__.py's
`from M import X` (in a .py file through its `ast`, in a .pyx file from its `def`/`cpdef` line), so that the stand-in
refuses keywords CuPy does not take (`where=`, `initial=`, ...); names bound otherwise (ufuncs) have none recorded.
"""
import ast
import json
import re
import subprocess
import sys
from pathlib import Path


def source(repo, tag, path):
    return subprocess.run(["git", "-C", repo, "show", f"{tag}:{path}"], check=True, capture_output=True,
                          text=True).stdout


def module_names(text):
    """The public names a module binds at its top level (imports, assignments, defs, classes), in if/try too."""
    names = set()

    def visit(body):
        for node in body:
            if isinstance(node, ast.ImportFrom) and node.module == "__future__":
                continue   # `from __future__ import annotations` binds no name
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names.update((a.asname or a.name).split(".")[0] for a in node.names if a.name != "*")
            elif isinstance(node, ast.Assign):
                for target in node.targets:
                    names.update(t.id for t in ast.walk(target) if isinstance(t, ast.Name))
            elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.If):
                visit(node.body), visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body), [visit(h.body) for h in node.handlers], visit(node.orelse)
    visit(ast.parse(text).body)
    return sorted(n for n in names if not n.startswith("_") or n in ("__version__",))


def class_members(text, header):
    """The methods and properties of one class in a .pyx file: 4-space `def`/`cpdef`/`property` lines of its block."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    members = set()
    for line in lines[start + 1:]:
        if line and not line[0].isspace() and not line.startswith("#"):
            break  # the next top-level statement ends the class
        m = re.match(r"    (?:cpdef|def)\s+(?:[\w.]+\s+)?(\w+)\s*\(", line) or re.match(r"    property (\w+):", line)
        if m:
            members.add(m.group(1))
    return members


def _params_of_line(text):
    """The parameter names of a Cython/Python parameter list (types and defaults dropped) -> (names, *args, **kw)."""
    depth, part, parts = 0, "", []
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(part)
            part = ""
        else:
            part += ch
    parts.append(part)
    names, varargs, varkw = [], False, False
    for part in (p.split("=")[0].strip() for p in parts):
        if not part or part == "*" or part == "/":
            continue
        if part.startswith("**"):
            varkw = True
        elif part.startswith("*"):
            varargs = True
        else:
            names.append(re.split(r"[\s*]+", part)[-1])
    return names, varargs, varkw


def signature(repo, tag, module, name, depth=0):
    """{"params", "varargs", "varkw"} of the function `name` that module (dotted) defines or re-exports, or None."""
    path = module.replace(".", "/")
    for candidate in (path + ".py", path + ".pyx", path + "/__init__.py"):
        try:
            text = source(repo, tag, candidate)
        except subprocess.CalledProcessError:
            continue
        if candidate.endswith(".pyx"):
            m = re.search(r"^(?:cpdef|def)\s+(?:[\w.]+\s+)?" + name + r"\s*\((.*?)\)\s*(?:except[^:]*)?:", text,
                          re.M | re.S)
            if m:
                params, varargs, varkw = _params_of_line(m.group(1))
                return {"params": params, "varargs": varargs, "varkw": varkw}
            return None
        for node in ast.parse(text).body:
            if isinstance(node, ast.FunctionDef) and node.name == name:
                a = node.args
                return {"params": [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs],
                        "varargs": a.vararg is not None, "varkw": a.kwarg is not None}
            if isinstance(node, ast.ImportFrom) and depth < 3 and node.module and node.level == 0:
                for alias in node.names:
                    if (alias.asname or alias.name) == name:
                        return signature(repo, tag, node.module, alias.name, depth + 1)
        return None
    return None


def function_signatures(repo, tag, package):
    """The signatures of the functions a package's __init__.py imports by name (`from M import f [as g]`)."""
    signatures = {}
    for node in ast.walk(ast.parse(source(repo, tag, package.replace(".", "/") + "/__init__.py"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and node.module.startswith("cupy"):
            for alias in node.names:
                found = signature(repo, tag, node.module, alias.name)
                if found is not None and not (alias.asname or alias.name).startswith("_"):
                    signatures[f"{package}.{alias.asname or alias.name}"] = found
    return signatures


def method_signatures(text, header):
    """The signatures of one Cython class's methods (4-space `def`/`cpdef` lines, self dropped)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    block = []
    for line in lines[start + 1:]:
        if line and not line[0].isspace() and not line.startswith("#"):
            break
        block.append(line)
    found = {}
    for m in re.finditer(r"^    (?:cpdef|def)\s+(?:[\w.]+\s+)?(\w+)\s*\((.*?)\)\s*(?:except[^:]*)?:", "\n".join(block),
                         re.M | re.S):
        params, varargs, varkw = _params_of_line(m.group(2))
        found.setdefault(m.group(1), {"params": params[1:], "varargs": varargs, "varkw": varkw})
    return found


def main(repo, tag):
    core = source(repo, tag, "cupy/_core/core.pyx")
    ndarray = class_members(core, "cdef class _ndarray_base") | class_members(core, "class ndarray(")
    ndarray |= set(re.findall(r"readonly\s+[\w.]+\s+(\w+)", source(repo, tag, "cupy/_core/core.pxd")))
    names = {
        "cupy_version": tag.lstrip("v"),
        "made_by": "tests/cupy_standin/make_lists.py from CuPy's git tag " + tag,
        "cupy": module_names(source(repo, tag, "cupy/__init__.py")),
        "cupy.ndarray": sorted(n for n in ndarray if not n.startswith("_") or n.startswith("__")),
        "cupy.ufunc": sorted(n for n in class_members(source(repo, tag, "cupy/_core/_kernel.pyx"), "cdef class ufunc")
                             if not n.startswith("_") or n.startswith("__")),
        "cupy.random": sorted(set(module_names(source(repo, tag, "cupy/random/__init__.py"))) | {"Generator"}),
        "cupy.random.Generator": sorted(
            n for n in class_members(source(repo, tag, "cupy/random/_generator_api.pyx"), "class Generator")
            if not n.startswith("_")),
        "cupy.cuda": module_names(source(repo, tag, "cupy/cuda/__init__.py")),
        "cupyx": module_names(source(repo, tag, "cupyx/__init__.py")),
    }
    signatures = function_signatures(repo, tag, "cupy")
    signatures.update({f"cupy.linalg.{k.split('.')[-1]}": v
                       for k, v in function_signatures(repo, tag, "cupy.linalg").items()})
    methods = method_signatures(core, "cdef class _ndarray_base")
    signatures.update({f"cupy.ndarray.{k}": v for k, v in methods.items() if not k.startswith("_")})
    names["signatures"] = dict(sorted(signatures.items()))
    out = Path(__file__).with_name("cupy_names.json")
    out.write_text(json.dumps(names, indent=1) + "\n")
    print(f"wrote {out}: " + ", ".join(f"{k} {len(v)}" for k, v in names.items() if isinstance(v, list)))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(*sys.argv[1:])
