"""What a failed check says about the mistake: the wrong derivation it matches, found by running every mutation of
the exercise's reference derivation (mutation.py) on the failing case and comparing what each returns with what
the student's answer returns (gradients, an order, a trace, or the error raised); where none matches, the smallest
failing case, shrunk from the drawn one, with its numbers, and no guess."""
import numpy as np

from . import engine_checks, mutation
from .drawing import draw_cases
from .failure import ExerciseFailed
from .grader import _value_and_grads
from .shrink import shrink
from .strict_shapes import strict_shapes

DISAMBIGUATE = 10   # drawn cases on which several matching mutations are told apart


def _op_outcome(exercise, function, case):
    """("grads", [out, then one gradient per input]) of sum(w * out) for the grader's fixed weights w, run as the
    grader runs the student's op (strict shapes, the same checks), or ("raised", what was raised). The output is
    compared too: a wrong forward (an overflow) is no mutation's, whatever its gradients."""
    try:
        with strict_shapes(), np.errstate(all="ignore"):
            out, grads, _ = _value_and_grads(exercise, lambda t: exercise.apply(function, t, case.options), case,
                                             f"{exercise.cls}:")
            return ("grads", [out, *grads])
    except Exception as e:
        return ("raised", *_raised(e))


def _raised(e):
    """What an error says, the same for the student's file and a mutation's: the error under the grader's message
    (whose wording may name the file), else the message's first line."""
    cause = e.__cause__
    if cause is not None:
        return type(cause).__name__, str(cause)
    return type(e).__name__, str(e).split("\n")[0]


def _engine_outcome(exercise, function, case):
    """What the student's function of the tiny engine gives on the case: the order's names, the leaves' gradients,
    the unbroadcast array, or the no_grad trace; ("raised", type, text) when it raises."""
    try:
        with np.errstate(all="ignore"):
            if exercise.name == "topo_sort":
                return ("order", [getattr(v, "name", repr(v)) for v in function(engine_checks._mine(case)[-1])])
            if exercise.name == "backward":
                g = np.random.default_rng(1).standard_normal(engine_checks.SHAPE)
                nodes = engine_checks._run_walk(function, case, g)
                return ("grads", [n.grad for n in nodes[:len(case.arrays)]])
            if exercise.name == "unbroadcast":
                return ("grads", [np.asarray(function(case.arrays[0].copy(), case.options["shape"]))])
            return ("trace", engine_checks.trace_of(function, case))
    except Exception as e:
        return ("raised", *_raised(e))


def _close(a, b):
    if a is None or b is None:
        return a is None and b is None
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype.kind not in "fciub" or b.dtype.kind not in "fciub":
        return False
    finite = np.abs(b[np.isfinite(b)]) if b.dtype.kind in "fc" else np.abs(b)
    size = max(float(finite.max(initial=0)), 1.0)
    return bool(np.allclose(a, b, rtol=1e-6, atol=1e-9 * size, equal_nan=True))


def same(x, y):
    """Whether two outcomes are the same (gradients equal to float64 round-off)."""
    if x[0] != y[0]:
        return False
    if x[0] in ("raised", "order", "trace"):
        return x == y
    return len(x[1]) == len(y[1]) and all(_close(a, b) for a, b in zip(x[1], y[1]))


def outcome(exercise, function, case):
    return (_op_outcome if hasattr(exercise, "apply") else _engine_outcome)(exercise, function, case)


def matching(exercise, function, case):
    """The mutations of the exercise's derivation whose outcome on `case` is the student's; where several match,
    those that also agree with the student on the other drawn cases."""
    mine = outcome(exercise, function, case)
    found = []
    for m in mutation.mutations(exercise.name):
        try:
            wrong = mutation.load(exercise.name, exercise.cls, m)
        except Exception:   # a mutation that cannot compile here is no diagnosis
            continue
        if same(outcome(exercise, wrong, case), mine):
            found.append(m)
    if len(found) > 1:
        for other in draw_cases(exercise, DISAMBIGUATE):
            theirs = outcome(exercise, function, other)
            kept = [m for m in found if same(outcome(exercise, mutation.load(exercise.name, exercise.cls, m), other),
                                             theirs)]
            found = kept or found
            if len(found) == 1:
                break
    return found


def diagnosis(exercise, function, case):
    """('diagnosis: ...' naming the matching mutation(s) in the exercise's words, or None; the mutations)."""
    found = matching(exercise, function, case)
    if not found:
        return None, found
    facts = mutation.facts(exercise.name, case.arrays, case.options)
    texts = list(dict.fromkeys(m.text(facts) for m in found))
    if len(texts) == 1:
        return f"diagnosis: {texts[0]}", found
    return "diagnosis: one of these mistakes (they give the same numbers here): " + "; or ".join(texts), found


def _with_diagnosis(text, line):
    """The failure's text with its first diagnosis line (the numbers' signature) replaced by `line`, or `line` put
    after the first line when it had none."""
    lines = text.split("\n")
    at = next((k for k, ln in enumerate(lines) if ln.startswith("  diagnosis: ")), None)
    if at is None:
        return "\n".join(lines[:1] + [f"  {line}"] + lines[1:])
    return "\n".join(lines[:at] + [f"  {line}"] + lines[at + 1:])


def explain(exercise, function, case, index, text, strict=True, show_smallest=True):
    """The failure on drawn case `index` (0-based) explained: the mistake named by the derivation it matches, or
    else (with show_smallest) the smallest failing case found by shrinking the drawn one, with its numbers. An
    ExerciseFailed whose `mutations` lists the ids of the mutations named."""
    line, found = diagnosis(exercise, function, case)
    if line is None:
        small = shrink(exercise, function, index, strict) if show_smallest else None
        failed = ExerciseFailed(text if small is None else (
            f"{text}\n  no wrong derivation this grader knows gives what yours gives; the smallest case found that "
            f"fails ({small.case.text}):\n    " + str(small.failure).replace("\n", "\n    ")))
        failed.mutations = []
        return failed
    if getattr(exercise, "smaller", None) is not None:
        # a case that is a structure (no_grad's blocks) holds no numbers that the diagnosis reads: the mistake is
        # shown where it is plainest, on the smallest case that fails
        small = shrink(exercise, function, index, strict)
        if small is not None:
            first, *rest = str(small.failure).split("\n")
            text = "\n".join([f"{first} (the drawn case, shrunk to the smallest that fails)", *rest])
    failed = ExerciseFailed(_with_diagnosis(text, line))
    failed.mutations = [m.id for m in found]
    return failed


__all__ = ["diagnosis", "explain", "matching", "outcome", "same"]
