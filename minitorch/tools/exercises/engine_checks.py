"""The checks of the exercises on the engine itself: each draws a random graph (or shapes, or a nesting of blocks),
runs the student's function on the tiny engine (harness.py) and the engine's own code on the same input, and names
the difference."""
import numpy as np

from ...core import backward as engine_backward
from ...core.grad_mode import no_grad as engine_no_grad
from ...tensor import Tensor
from . import reference
from .case import ROW, Case
from .blame import files_of, read, where
from .diagnose import plain, show
from .failure import ExerciseFailed
from .harness import Value, build, state

SHAPE = (ROW,)   # rows as short as the op exercises' cases


def _values(draw, st, shape):
    return np.random.default_rng(draw(st.integers(0, 2**32 - 1))).standard_normal(shape)


def draw_graph(draw, st, hnp):
    """A random graph: 1 to 3 leaves, 2 to 7 ops (add, mul, tanh) on earlier nodes; x * x and a node used twice are
    drawn often. The root is the last node."""
    n_leaves, n_ops = draw(st.integers(1, 3)), draw(st.integers(2, 7))
    program = []
    for k in range(n_ops):
        size = n_leaves + k
        op = draw(st.sampled_from(["add", "mul", "mul", "tanh"]))
        i = draw(st.integers(max(0, size - 3), size - 1))   # mostly recent nodes: long chains, shared subgraphs
        j = draw(st.sampled_from([i, draw(st.integers(0, size - 1))]))
        program.append((op, i, j))
    leaves = [_values(draw, st, SHAPE) for _ in range(n_leaves)]
    text = "; ".join(f"n{n_leaves + k} = " + (f"tanh(n{i})" if op == "tanh" else f"n{i} {'+*'[op == 'mul']} n{j}")
                     for k, (op, i, j) in enumerate(program))
    return Case(leaves, {"program": program}, f"the graph ({n_leaves} leaves n0..n{n_leaves - 1}; {text})")


def _mine(case):
    def leaf(a, name):
        return Value(a.copy(), name=name)
    nodes = build(case.options["program"], case.arrays, leaf)
    for k, v in enumerate(nodes):
        v.name = f"n{k}"
    return nodes


def _engines(case):
    return build(case.options["program"], case.arrays, lambda a, name: Tensor._make(a.copy(), requires_grad=True))


def check_topological_order(function, case, strict=True):
    nodes = _mine(case)
    root = nodes[-1]
    tensors = _engines(case)
    root_node = tensors[-1]._op or tensors[-1]   # the engine's graph node of the root: its op
    reachable = len(engine_backward._topological_order([root_node]))  # the engine's own walk, on the same graph
    try:
        order = list(function(root))
    except NotImplementedError:
        raise ExerciseFailed("topological_order is not written yet (it raises NotImplementedError)") from None
    except Exception as e:
        place = where(e, files_of(function))
        raise ExerciseFailed(f"topological_order failed on {case.text}: {type(e).__name__}: {e}{place}"
                             f"{read(e) if place else ''}") from e
    names = " ".join(getattr(v, "name", repr(v)) for v in order)
    shown = f"on {case.text}: your order is [{names}]"
    seen = [id(v) for v in order]
    twice = [v.name for k, v in enumerate(order) if id(v) in seen[:k]]
    if twice:
        raise ExerciseFailed(f"topological_order lists {twice[0]} twice {shown}\n  diagnosis: a node used twice "
                             f"(by two nodes, or as both operands of x * x) is reached twice: keep a set of the nodes "
                             f"visited and skip them")
    if len(order) != reachable:
        raise ExerciseFailed(f"topological_order lists {len(order)} nodes where {reachable} are reachable from the "
                             f"root (as the engine counts them) {shown}\n  diagnosis: every node reachable from the "
                             f"root through .parents, the leaves included, once")
    position = {id(v): k for k, v in enumerate(order)}
    if order[0] is not root:
        raise ExerciseFailed(f"topological_order does not start with the root {shown}\n  diagnosis: the root comes "
                             f"first (append each node after its parents, then reverse the list)")
    for v in order:
        for p in v.parents:
            if position[id(p)] < position[id(v)]:
                raise ExerciseFailed(f"topological_order puts {p.name} before {v.name}, which uses it, {shown}\n"
                                     f"  diagnosis: each node must come before the nodes it was computed from, so "
                                     f"that its gradient is complete when backward reaches it: append a node after "
                                     f"visiting all its parents (depth first), then reverse")


def _leaf_grads_engine(case, g):
    tensors = _engines(case)
    (tensors[-1] * Tensor._make(g)).sum().backward()
    n = len(case.arrays)
    return [None if t.grad is None else t.grad.numpy() for t in tensors[:n]]   # None: not reachable from the root


def _run_walk(function, case, g):
    nodes = _mine(case)
    nodes[-1].grad = g.copy()
    function(reference.topological_order(nodes[-1]))
    return nodes


def check_backward(function, case, strict=True):
    g = np.random.default_rng(1).standard_normal(SHAPE)
    try:
        nodes = _run_walk(function, case, g)
    except NotImplementedError:
        raise ExerciseFailed("backward is not written yet (it raises NotImplementedError)") from None
    except Exception as e:
        place = where(e, files_of(function))
        raise ExerciseFailed(f"backward failed on {case.text}: {type(e).__name__}: {e}{place}"
                             f"{read(e) if place else ''}") from e
    want = _leaf_grads_engine(case, g)
    for k, w in enumerate(want):
        got = nodes[k].grad
        if w is None and got is None:
            continue
        if w is None:
            raise ExerciseFailed(f"backward gave n{k} a gradient on {case.text}, where n{k} is not reachable from "
                                 f"the root")
        if got is None:
            raise ExerciseFailed(f"backward left n{k}.grad None on {case.text}\n  diagnosis: every node reached from "
                                 f"the root gets a gradient (the leaves too)")
        if np.shape(got) == w.shape and np.allclose(got, w, rtol=1e-9, atol=1e-12):
            continue
        raise ExerciseFailed(f"backward: dL/dn{k} differs from the engine's on {case.text}\n"
                             + show(case.arrays, [f"n{i}" for i in range(len(want))], g,
                                    [n.grad for n in nodes], want, k, "engine"))


def draw_unbroadcast(draw, st, hnp):
    out = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=3, max_side=4))
    shape = draw(hnp.mutually_broadcastable_shapes(num_shapes=1, base_shape=out, min_dims=0,
                                                   max_dims=3)).input_shapes[0]
    grad = _values(draw, st, np.broadcast_shapes(out, shape))
    return Case([grad], {"shape": shape}, f"grad {grad.shape} to shape {shape}")


def check_unbroadcast(function, case, strict=True):
    grad, shape = case.arrays[0], case.options["shape"]
    want = engine_backward.unbroadcast(grad.copy(), shape)   # the engine's own
    try:
        got = np.asarray(function(grad.copy(), shape))
    except NotImplementedError:
        raise ExerciseFailed("unbroadcast is not written yet (it raises NotImplementedError)") from None
    except Exception as e:
        place = where(e, files_of(function))
        raise ExerciseFailed(f"unbroadcast failed on {case.text}: {type(e).__name__}: {e}{place}"
                             f"{read(e) if place else ''}") from e
    if got.shape != tuple(shape):
        if got.ndim > len(shape):
            why = "the leading axes that broadcasting added are not summed away"
        elif got.ndim < len(shape):
            why = "summed without keepdims=True: an axis of size 1 in the input's shape disappeared"
        elif got.ndim == len(shape) and any(n == 1 and m != 1 for n, m in zip(shape, got.shape)):
            why = "an axis of size 1 in the input's shape, stretched by broadcasting, is not summed (keepdims=True)"
        else:
            why = "the result must have the input's shape"
        raise ExerciseFailed(f"unbroadcast: a wrong-shaped gradient on {case.text}: shape {got.shape}, expected "
                             f"{tuple(shape)}\n  diagnosis: {why}\n  grad: {plain(grad)}")
    if not np.allclose(got, want, rtol=1e-9, atol=1e-12):
        raise ExerciseFailed(f"unbroadcast differs from the engine's on {case.text}\n  grad: {plain(grad)}\n"
                             f"  yours: {plain(got)}\n  the engine's: {plain(want)}")


def draw_blocks(draw, st, hnp):
    """A nesting of no_grad blocks, some left by an exception: [("op",) | ("block", steps, raises)]."""
    def steps(depth):
        out = []
        for _ in range(draw(st.integers(1, 3))):
            if depth < 3 and draw(st.booleans()):
                out.append(("block", steps(depth + 1), draw(st.booleans())))
            else:
                out.append(("op",))
        return out
    program = steps(0)
    if not any(s[0] == "block" for s in program):
        program.append(("block", [("op",)], draw(st.booleans())))
    return Case([], {"program": program}, f"the blocks {_describe(program)}")


def _describe(steps):
    return "[" + ", ".join("op" if s[0] == "op" else f"no_grad{'(raises)' * s[2]} {_describe(s[1])}"
                           for s in steps) + "]"


class _Planned(Exception):
    """Raised inside a block to leave it by an exception."""


def _trace(program, no_grad, records):
    """Run program with no_grad, recording after each op and after each block whether an op records its graph."""
    trace = []

    def run(steps, where):
        for s in steps:
            if s[0] == "op":
                trace.append((records(), where))
                continue
            try:
                with no_grad():
                    run(s[1], "inside a no_grad block")
                    if s[2]:
                        raise _Planned
            except _Planned:
                pass
            after = "after a block left by an exception" if s[2] else "after a block"
            trace.append((records(), after + (" nested in another" if where != "outside" else "")))
    run(program, "outside")
    trace.append((records(), "after every block"))
    return trace


def _student_trace(function, program):
    """The trace of program's blocks with `function` as no_grad on the tiny engine, which is left recording."""
    v = Value(np.ones(2))
    state.grad_enabled = True
    try:
        return _trace(program, function, lambda: bool((v * v).parents))
    finally:
        state.grad_enabled = True


def trace_of(function, case):
    """The trace of the case's blocks with `function` as no_grad (what a mutation of no_grad is compared by)."""
    return _student_trace(function, case.options["program"])


def _no_grad_mismatch(function, program):
    """(where, yours, the engine's) for the first op whose recording differs between the student's no_grad and the
    engine's on program, or None."""
    x = Tensor._make(np.ones(2), requires_grad=True)
    want = _trace(program, engine_no_grad, lambda: (x * x).requires_grad)
    got = _student_trace(function, program)
    return next(((where, mine, engine) for (mine, where), (engine, _) in zip(got, want) if mine != engine), None)


def _smaller(steps):
    """Each program one step smaller than steps: a step left out, a block replaced by what it holds, a block that
    raises made one that does not, or one of these inside a block."""
    for k, s in enumerate(steps):
        yield steps[:k] + steps[k + 1:]
        if s[0] == "block":
            yield steps[:k] + s[1] + steps[k + 1:]
            if s[2]:
                yield steps[:k] + [("block", s[1], False)] + steps[k + 1:]
            for inner in _smaller(s[1]):
                yield steps[:k] + [("block", inner, s[2])] + steps[k + 1:]


def smaller_blocks(case):
    """The nestings one step smaller than the case's (what shrink.py shrinks a failing no_grad case by: a block
    has nothing drawn to lower, and a step or a block left out shows the mistake on a shorter nesting)."""
    for program in _smaller(case.options["program"]):
        yield Case([], {"program": program}, f"the blocks {_describe(program)}")


def check_no_grad(function, case, strict=True):
    program = case.options["program"]
    try:
        mismatch = _no_grad_mismatch(function, program)
    except NotImplementedError:
        raise ExerciseFailed("no_grad is not written yet (it raises NotImplementedError)") from None
    except Exception as e:
        raise ExerciseFailed(f"no_grad failed on {case.text}: {type(e).__name__}: {e}"
                             f"{where(e, files_of(function))}") from e
    if mismatch is None:
        return
    place, mine, engine = mismatch
    why = {"after a block left by an exception": "restore the mode in a finally: clause, so that an exception inside "
                                                 "the block cannot leave it off",
           "nested": "restore the mode the block found (a saved previous value), not True: an inner block ends inside "
                     "an outer one"}
    key = "nested" if "nested" in place and "exception" not in place else place
    hint = why.get(key, "an op records its graph exactly when no no_grad block is open")
    raise ExerciseFailed(f"no_grad: an op {place} {'records' if mine else 'does not record'} its graph where the "
                         f"engine's {'does' if engine else 'does not'}, on {case.text}\n  diagnosis: {hint}")
