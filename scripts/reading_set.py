"""The learner's reading set, measured by what runs: the minitorch functions that one op's forward and backward enter.

    python3 scripts/reading_set.py              # the two tables (markdown), and whether the goals are met
    python3 scripts/reading_set.py --list       # each function entered: file:line name length (nested ones marked)
    python3 scripts/reading_set.py --check      # docs/design.md's table equals the output, or a diff and exit 1
    python3 scripts/reading_set.py --write      # rewrite that table in docs/design.md

Two paths, each run on the CPU with default settings (kernels on, grad mode on, float32): `y = a * b; y.backward(g);
a.grad` and `y = mt.softmax(x, dim=-1); y.backward(g); x.grad`. The inputs are made outside the trace, and each path
runs once untraced first, so that what the trace sees is the op itself, not a first call's imports or caches. Then
sys.settrace records every code object entered (its "call" events) whose file lies in this checkout's minitorch/.

How it counts: a reader reads each function entered whole, so each counts from its `def` line (decorators excluded)
through its last line, docstring, comments and blank lines included (a lambda: its lines). A function that lies inside
another one counted (a closure, a lambda, a comprehension or generator expression, which are code objects of their
own) is read with it and not counted again. Module and class bodies are not functions and are not counted. Output:
per file, the functions and lines; a total row (lines, functions, files) for each path.
"""
import argparse
import ast
import difflib
import inspect
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))   # this checkout's minitorch, whatever else is installed

import numpy as np  # noqa: E402

import minitorch as mt  # noqa: E402

PACKAGE = Path(mt.__file__).resolve().parent
DESIGN = ROOT / "docs" / "design.md"
BEGIN, END = "<!-- reading-set:begin -->", "<!-- reading-set:end -->"
GOALS = {"Mul": (147, 4), "softmax": (177, 5)}   # at most this many lines in at most this many files


def mul_path(a, b, g):
    y = a * b
    y.backward(g)
    return a.grad


def softmax_path(x, g):
    y = mt.softmax(x, dim=-1)
    y.backward(g)
    return x.grad


def paths():
    """(name, the code a learner types, the function that runs it, its inputs made here, outside the trace)."""
    rng = np.random.default_rng(0)
    a = mt.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    b = mt.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    x = mt.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    return [("Mul", "y = a * b; y.backward(g); a.grad", mul_path, (a, b, mt.ones(3, 4))),
            ("softmax", "y = mt.softmax(x, dim=-1); y.backward(g); x.grad", softmax_path, (x, mt.ones(3, 4)))]


def entered(fn, args):
    """The code objects of minitorch/ that fn(*args) enters, each once, in the order first entered."""
    seen, files = {}, {}

    def tracer(frame, event, arg):
        code = frame.f_code
        if code not in seen:
            name = files.get(code.co_filename)
            if name is None:
                name = files[code.co_filename] = os.path.realpath(code.co_filename)
            if Path(name).is_relative_to(PACKAGE):
                seen[code] = None
        return None   # no line events: only calls are wanted

    sys.settrace(tracer)
    try:
        fn(*args)
    finally:
        sys.settrace(None)
    return list(seen)


_DEFS = {}


def definitions(filename):
    """{(first line as the code object gives it, name): (def line, last line)} for every function, lambda and
    comprehension of a file. A decorated function's code object starts at its first decorator; its def line does not."""
    if filename not in _DEFS:
        spans = {}
        names = {ast.ListComp: "<listcomp>", ast.SetComp: "<setcomp>", ast.DictComp: "<dictcomp>",
                 ast.GeneratorExp: "<genexpr>", ast.Lambda: "<lambda>"}
        for node in ast.walk(ast.parse(Path(filename).read_text(), filename)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([node.lineno] + [d.lineno for d in node.decorator_list])
                spans[(first, node.name)] = (node.lineno, node.end_lineno)
            elif type(node) in names:
                key = (node.lineno, names[type(node)])
                start, end = spans.get(key, (node.lineno, node.end_lineno))
                spans[key] = (start, max(end, node.end_lineno))   # two on one line: the longer
        _DEFS[filename] = spans
    return _DEFS[filename]


def span(code):
    """(def line, last line) of a function's code object."""
    filename = os.path.realpath(code.co_filename)
    found = definitions(filename).get((code.co_firstlineno, code.co_name))
    if found is None:   # not in the source as parsed: the lines the code object spans
        lines = [line for _, _, line in code.co_lines() if line is not None]
        found = (code.co_firstlineno, max(lines + [code.co_firstlineno]))
    return found


def measure(codes, nested=None):
    """The functions a reader reads: [(path, def line, last line, name)], those inside another one left out (and
    appended to `nested`, where given, with the name of the function they are read with)."""
    functions = [code for code in codes if code.co_flags & inspect.CO_NEWLOCALS]   # not module or class bodies
    found = sorted({(os.path.relpath(os.path.realpath(c.co_filename), ROOT), *span(c),
                     getattr(c, "co_qualname", c.co_name))   # Python 3.10: no co_qualname
                    for c in functions}, key=lambda f: (f[0], f[1], -f[2]))
    read = []
    for path, start, end, name in found:
        if read and read[-1][0] == path and read[-1][1] <= start and end <= read[-1][2]:
            if nested is not None:   # inside the function before it: read with it
                nested.append((path, start, end, name, read[-1][3]))
            continue
        read.append((path, start, end, name))
    return read


def table(name, code, read, nested=()):
    per_file = {}
    for path, start, end, _ in read:
        count, lines = per_file.get(path, (0, 0))
        per_file[path] = (count + 1, lines + end - start + 1)
    total = sum(lines for _, lines in per_file.values())
    most_lines, most_files = GOALS[name]
    met = total <= most_lines and len(per_file) <= most_files
    rows = [f"**{name}**: `{code}` ({total} lines of {len(read)} functions in {len(per_file)} files; the goal, at most "
            f"{most_lines} lines in at most {most_files} files, is {'met' if met else 'not met'})", "",
            "| file | functions | lines |", "|---|---:|---:|"]
    for path, (count, lines) in sorted(per_file.items(), key=lambda item: (-item[1][1], item[0])):
        rows.append(f"| {path} | {count} | {lines} |")
    rows.append(f"| total: {len(per_file)} files | {len(read)} | {total} |")
    return "\n".join(rows)


def measured():
    """[(name, code, the functions read, those entered inside them)] for each path, measured now."""
    results = []
    for (name, code, fn, args), (_, _, _, fresh) in zip(paths(), paths()):
        fn(*args)                                              # a first call's imports and caches, untraced
        nested = []
        results.append((name, code, measure(entered(fn, fresh), nested), nested))
    return results


def report(results=None):
    """The markdown that docs/design.md holds between the markers."""
    results = results or measured()
    return "\n\n".join(table(*result) for result in results) + "\n"


def section(text):
    """The text between the markers of a document, or None where it has none."""
    if BEGIN not in text or END not in text:
        return None
    return text.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n") + "\n"


def check(path=DESIGN, output=None):
    """'' when the document's table is the script's output, else a unified diff (stored -> measured)."""
    output = output if output is not None else report()
    stored = section(Path(path).read_text())
    if stored is None:
        return f"{path} has no {BEGIN} ... {END} section\n"
    return "".join(difflib.unified_diff(stored.splitlines(True), output.splitlines(True),
                                        f"{path} (stored)", "scripts/reading_set.py (measured)"))


def write(path=DESIGN, output=None):
    text = Path(path).read_text()
    if section(text) is None:
        raise SystemExit(f"{path} has no {BEGIN} ... {END} section to rewrite")
    head, rest = text.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    Path(path).write_text(f"{head}{BEGIN}\n{output or report()}{END}{tail}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--list", action="store_true", help="each function entered: file:line name length")
    mode.add_argument("--check", nargs="?", const=str(DESIGN), metavar="FILE",
                      help="exit 1 with a diff where FILE's table (default docs/design.md) differs from the output")
    mode.add_argument("--write", nargs="?", const=str(DESIGN), metavar="FILE",
                      help="rewrite FILE's table (default docs/design.md) with the output")
    options = parser.parse_args(argv)
    results = measured()
    if options.list:
        for name, code, read, nested in results:
            print(f"{name}: {code}")
            for path, start, end, function in read:
                print(f"  {path}:{start} {function} {end - start + 1}")
                for inner_path, inner_start, inner_end, inner, outer in nested:
                    if (inner_path, outer) == (path, function):
                        print(f"    {inner_path}:{inner_start} {inner} {inner_end - inner_start + 1} "
                              f"(inside {function}: not counted again)")
        return 0
    output = report(results)
    if options.check:
        diff = check(options.check, output)
        sys.stdout.write(diff or f"{options.check}: the reading set's table is up to date\n")
        return 1 if diff else 0
    if options.write:
        write(options.write, output)
        print(f"wrote the reading set's table into {options.write}")
        return 0
    sys.stdout.write(output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
