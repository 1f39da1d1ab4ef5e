"""Wrong derivations, made systematically from the right one.

Each exercise's reference answer (derivations/NAME.py) is a whole student file whose backward is written as named
parts, each marked where it stands:

    term("key", x)            a term of a sum            -> dropped, its sign flipped, counted twice
    factor("key", x)          a factor of a product      -> left out
    scale("key", x)           a constant scale           -> missing, applied twice, inverted
    pick("key", x, name=y)    x, where a mistake puts y  -> y (a factor on the wrong operand, the output for the
                              (a wrong point, operand,      input, a derivative at the wrong point, a transpose or an
                              axis, region ...)             axis wrong, a region (border, stride holes) wrong)
    blocks("key", [a, b, c])  parts laid side by side    -> two of them swapped
    if step("key"): ...       a step of an algorithm     -> left out; `elif instead("key", "name"): ...` branches
                                                            are what a mistake does in its place

A mutation is one operator applied at one place; `render` writes the file with it applied, as a student would have
written it (the markers gone), and `load` runs that file. The file's WORDS name each part in the exercise's own
words ({n}-style fields are filled from its FACTS(arrays, options) on the failing case), so that a diagnosis says
which part of the derivation is wrong and never names a part the exercise does not have.
"""
import ast
import functools
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent / "derivations"
MARKERS = ("term", "factor", "scale", "pick", "blocks")


# the markers, as the reference file runs (unmutated): each is its right value
def term(key, x):
    return x


factor = scale = term


def pick(key, x, **wrong):
    return x


def blocks(key, parts):
    return parts


def step(key):
    return True


def instead(key, name):
    return False


OPERATORS = {   # kind -> [(operator, how the diagnosis says it)]
    "term": [("drop", "{w} is missing"), ("flip", "{w} has its sign flipped"), ("double", "{w} is counted twice")],
    "factor": [("drop", "{w} is left out")],
    "scale": [("drop", "{w} is missing"), ("twice", "{w} is applied twice"),
              ("invert", "{w} is inverted (multiplied where it divides)")],
    "step": [("drop", "{w} is left out")],
}


@dataclass(frozen=True)
class Mutation:
    exercise: str
    key: str          # the part of the derivation
    operator: str     # drop, flip, double, twice, invert, swap i j, or a pick's or step's alternative
    says: str         # the diagnosis, in the exercise's words; {fields} from FACTS

    @property
    def id(self):
        return f"{self.exercise}:{self.key}:{self.operator}"

    def text(self, facts):
        """The diagnosis with the case's facts filled in."""
        return self.says.format(**facts) if facts else self.says


def source(name):
    return (HERE / f"{name}.py").read_text()


@functools.lru_cache(maxsize=None)
def _parsed(name):
    tree = ast.parse(source(name))
    words = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and [t.id for t in node.targets if isinstance(t, ast.Name)] == ["WORDS"]:
            words = ast.literal_eval(node.value)
    return tree, words


def _key(call):
    if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.args and isinstance(
            call.args[0], ast.Constant):
        return call.func.id, call.args[0].value
    return None, None


def _said(words, name, key, operator=None):
    """WORDS[(key, operator)] or WORDS[key] (its text, where it is (text, block names)); KeyError naming the file."""
    entry = key if operator is None else (key, operator)
    if entry not in words:
        raise KeyError(f"derivations/{name}.py: WORDS has no entry for {entry!r}")
    w = words[entry]
    return w[0] if isinstance(w, tuple) else w


def _alternatives(node):
    """(name, body) of each `elif instead(key, name):` branch of an `if step(key):` statement."""
    branch = node.orelse
    while len(branch) == 1 and isinstance(branch[0], ast.If) and _key(branch[0].test)[0] == "instead":
        yield branch[0].test.args[1].value, branch[0].body
        branch = branch[0].orelse


def _of(name, words, node):
    """The mutations of one marked part (a marker's call, or an `if step(key):`)."""
    if isinstance(node, ast.If):
        kind, key = _key(node.test)
        if kind != "step":
            return []
        found = [Mutation(name, key, alt, _said(words, name, key, alt)) for alt, _ in _alternatives(node)]
        if not found or key in words or (key, "drop") in words:   # one with alternatives is dropped where WORDS says
            found.append(Mutation(name, key, "drop", words.get((key, "drop")) or OPERATORS["step"][0][1].format(
                w=_said(words, name, key))))
        return found
    kind, key = _key(node)
    if kind in ("term", "factor", "scale"):   # WORDS[(key, operator)] says it where the template would not
        return [Mutation(name, key, op, words.get((key, op)) or how.format(w=_said(words, name, key)))
                for op, how in OPERATORS[kind]]
    if kind == "pick":
        return [Mutation(name, key, k.arg, _said(words, name, key, k.arg)) for k in node.keywords]
    if kind == "blocks":
        w = words[key]
        text, names = w if isinstance(w, tuple) else (w, [ast.unparse(e) for e in node.args[1].elts])
        return [Mutation(name, key, f"swap {i} {j}", f"{text}: {names[i]} and {names[j]} are swapped")
                for i in range(len(names)) for j in range(i + 1, len(names))]
    return []


@functools.lru_cache(maxsize=None)
def mutations(name):
    """Every mutation of the exercise's derivation, in the order its parts appear; a part marked at several places
    (the same transpose in dA and dB, a step in two places) is one mutation."""
    tree, words = _parsed(name)
    found = sorted(((node.lineno, k, m) for node in ast.walk(tree) if hasattr(node, "lineno")
                    for k, m in enumerate(_of(name, words, node))), key=lambda item: item[:2])
    unique = {}
    for _, _, m in found:
        unique.setdefault(m.id, m)
    return tuple(unique.values())


class _Apply(ast.NodeTransformer):
    """The file with one mutation applied (or none) and every marker replaced by what it stands for."""

    def __init__(self, mutation):
        self.key = None if mutation is None else mutation.key
        self.operator = None if mutation is None else mutation.operator

    def visit_Call(self, node):
        self.generic_visit(node)
        kind, key = _key(node)
        if kind not in MARKERS:
            return node
        mutated = key == self.key
        if kind == "pick":
            if mutated:
                return next(k.value for k in node.keywords if k.arg == self.operator)
            return node.args[1]
        if kind == "blocks":
            parts = node.args[1]
            if mutated:
                i, j = map(int, self.operator.split()[1:])
                elts = list(parts.elts)
                elts[i], elts[j] = elts[j], elts[i]
                parts = ast.List(elts=elts, ctx=ast.Load())
            return parts
        x = node.args[1]
        if not mutated:
            return x
        op = self.operator
        if op == "drop":
            return ast.Constant(0 if kind == "term" else 1)
        if op == "flip":
            return ast.UnaryOp(ast.USub(), x)
        if op == "double":
            return ast.BinOp(ast.Constant(2), ast.Mult(), x)
        if op == "twice":
            return ast.BinOp(x, ast.Mult(), x)
        return ast.BinOp(ast.Constant(1), ast.Div(), x)   # invert

    def visit_If(self, node):
        kind, key = _key(node.test)
        if kind != "step":
            self.generic_visit(node)
            return node
        chosen = node.body
        if key == self.key:   # the named alternative, else nothing (dropped, or this place is not the one changed)
            chosen = next((body for alt, body in _alternatives(node) if alt == self.operator), [])
        out = []
        for statement in chosen:
            visited = self.visit(statement)
            out += visited if isinstance(visited, list) else [visited]
        return out or [ast.Pass()]


class _Simplify(ast.NodeTransformer):
    """What a student writes where a mutation left x + 0, x * 1, 1 / (1 / x) or --x."""

    def visit_BinOp(self, node):
        self.generic_visit(node)
        left, right = node.left, node.right

        def const(n, v):
            return isinstance(n, ast.Constant) and not isinstance(n.value, bool) and n.value == v

        if isinstance(node.op, ast.Add):
            if const(right, 0):
                return left
            if const(left, 0):
                return right
        if isinstance(node.op, ast.Sub):
            if const(right, 0):
                return left
            if const(left, 0):
                return ast.UnaryOp(ast.USub(), right)
        if isinstance(node.op, ast.Mult):
            if const(right, 1):
                return left
            if const(left, 1):
                return right
        if isinstance(node.op, ast.Div):
            if const(right, 1):
                return left
            if isinstance(right, ast.BinOp) and isinstance(right.op, ast.Div) and const(right.left, 1):
                return ast.BinOp(left, ast.Mult(), right.right) if not const(left, 1) else right.right
        return node

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.USub):
            inner = node.operand
            if isinstance(inner, ast.UnaryOp) and isinstance(inner.op, ast.USub):
                return inner.operand
            if isinstance(inner, ast.Constant) and inner.value == 0:
                return inner
        return node

    def visit_Assign(self, node):
        self.generic_visit(node)
        if len(node.targets) == 1 and ast.dump(node.targets[0]).replace("Store", "Load") == ast.dump(node.value):
            return None   # x = x, where a mutation left a name as it was
        return node


def _strip(tree):
    """The file without its WORDS and FACTS and without the markers' import: what a student's file holds."""
    body = []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module and node.module.endswith("exercises.mutation"):
            continue
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "WORDS" for t in node.targets):
            continue
        if isinstance(node, ast.FunctionDef) and node.name == "FACTS":
            continue
        body.append(node)
    tree.body = body
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    tree.body = [n for n in body if not (isinstance(n, ast.FunctionDef) and n.name.startswith("_") and
                                         n.name not in used)]   # a helper only a mutation calls
    for node in ast.walk(tree):   # a body left with only `pass` and more: drop the pass
        for field in ("body", "orelse"):
            block = getattr(node, field, None)
            if field == "body" and block == [] and not isinstance(node, ast.Module):
                setattr(node, field, [ast.Pass()])
            elif isinstance(block, list) and len(block) > 1:
                setattr(node, field, [s for s in block if not isinstance(s, ast.Pass)] or [ast.Pass()])
    return tree


@functools.lru_cache(maxsize=None)
def render(name, mutation=None):
    """The source of the exercise's answer with `mutation` applied (None: the right answer), as a student writes it."""
    tree = ast.parse(source(name))   # a fresh tree: the transformers change it
    tree = _Simplify().visit(_Apply(mutation).visit(tree))
    tree = ast.fix_missing_locations(_strip(tree))
    return ast.unparse(tree) + "\n"


@functools.lru_cache(maxsize=None)
def load(name, cls, mutation=None):
    """The class (or function) `cls` of the rendered file."""
    namespace = {"__name__": f"minitorch_derivation_{name}"}
    label = "right" if mutation is None else mutation.id
    exec(compile(render(name, mutation), f"<derivation {name}, {label}>", "exec"), namespace)
    return namespace[cls]


def facts(name, arrays, options):
    """The fields of this case the words use (FACTS in the derivation file), or {}."""
    tree, _ = _parsed(name)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "FACTS":
            namespace = {}
            exec(compile(ast.Module(body=[_import_numpy(), node], type_ignores=[]), f"<{name} FACTS>", "exec"),
                 namespace)
            return namespace["FACTS"](arrays, options)
    return {}


def _import_numpy():
    return ast.parse("import numpy as np").body[0]


__all__ = ["Mutation", "blocks", "factor", "facts", "instead", "load", "mutations", "pick", "render", "scale",
           "step", "term"]
