"""Grading one exercise: the student's Function against central finite differences (its own forward, float64) and
against the engine's own op (values and gradients), on hypothesis-drawn shapes and options."""
import re

import numpy as np

from ... import backend
from ...gradcheck import GradcheckError, gradcheck
from ...tensor import Tensor

EXAMPLES = 10  # drawn cases per check: a wrong backward fails on the first few; the whole sequence runs in seconds


class ExerciseFailed(AssertionError):
    """A graded Function is not finished or is wrong; the message says where and on which input."""


def check(exercise, function, max_examples=EXAMPLES):
    """Grade `function` (a Function class) for `exercise`; raise ExerciseFailed on the first wrong case, else return
    the number of cases checked."""
    try:
        from hypothesis import HealthCheck, Phase, Verbosity, given, settings, strategies as st
        from hypothesis.extra import numpy as hnp
    except ImportError:
        raise RuntimeError("the exercises' checks draw their inputs with hypothesis: pip install hypothesis (or "
                           "pip install -e '.[dev]')") from None
    cases = []

    # derandomized: the same cases on every run, so a grade never flakes; no database, no shrinking (the first
    # failing case is reported as drawn)
    @settings(max_examples=max_examples, derandomize=True, database=None, deadline=None, verbosity=Verbosity.quiet,
              phases=(Phase.explicit, Phase.generate), suppress_health_check=list(HealthCheck))
    @given(st.data())
    def run(data):
        case = exercise.draw(data.draw, st, hnp)
        cases.append(case)
        check_case(exercise, function, case)

    run()
    return len(cases)


def _leaves(case):
    return [None if a is None else Tensor._make(a.copy(), requires_grad=True) for a in case.arrays]


# what Function.apply sets on an op: the inputs (masks and targets among them) and the options, not saved state
APPLY_ATTRIBUTES = {"parents", "options", "saved"}


def _arrays_kept_as_attributes(student_op):
    """(name, array) for each array the student's op keeps as a plain attribute (one level into tuples and lists)
    instead of declaring it with save_for_backward: feedback for the student (the engine never scans an op)."""
    saved = {id(v) for v in student_op.saved}
    for name, value in vars(student_op).items():
        if name in APPLY_ATTRIBUTES:
            continue
        for item in value if isinstance(value, (tuple, list)) else (value,):
            if backend.is_array(item) and id(item) not in saved:
                yield name, item


def _value_and_grads(exercise, call, case, who, graded=False):
    """call(tensors) and the gradients of sum(w * out) for fixed random weights w: (out array, [grad arrays]).
    graded: the student's op, whose saved state is checked too."""
    leaves = _leaves(case)
    stage = "forward"
    try:
        out = call(leaves)
        kept = next(_arrays_kept_as_attributes(out._op), None) if graded and out._op is not None else None
        if kept is not None:
            name, array = kept
            raise ExerciseFailed(f"{who} forward keeps an array as self.{name} ({array.dtype} {array.shape}): declare "
                                 f"every array backward reads with self.save_for_backward(...) and read them back in "
                                 f"backward with self.saved_tensors (Python values such as dims and flags stay plain "
                                 f"attributes)")
        weights = np.random.default_rng(1).standard_normal(out.shape)
        stage = "backward"
        (out * Tensor._make(weights)).sum().backward()
    except NotImplementedError:
        raise ExerciseFailed(f"{who} {stage} is not written yet (it raises NotImplementedError)") from None
    except ExerciseFailed:
        raise
    except Exception as e:
        # the engine checks what backward returns: "... incorrect number of gradients (expected n, got m)"
        count = re.search(r"incorrect number of gradients \(expected (\d+), got (\d+)\)", str(e))
        if count is not None:
            expected, got = map(int, count.groups())
            inputs = f"the {expected} input{'s' * (expected != 1)} of apply"
            raise ExerciseFailed(f"{who} backward returned {got} gradient{'s' * (got != 1)} for {inputs} on "
                                 f"{case.text}: return a tuple of one gradient per input, in order, with None for an "
                                 f"input that gets none (a mask, a target)") from None
        raise ExerciseFailed(f"{who} {stage} failed on {case.text}: {type(e).__name__}: {e}") from e
    grads = [None if t is None else (np.zeros(t.shape) if t.grad is None else t.grad.numpy()) for t in leaves]
    return out.numpy(), grads


def check_case(exercise, function, case):
    """One drawn case: raise ExerciseFailed naming what differs."""
    def mine(tensors):
        return exercise.apply(function, tensors, case.options)

    def engine(tensors):
        return exercise.reference(tensors, case.options)

    with np.errstate(all="ignore"):  # an overflow or 0/0 shows as inf or nan in the comparison, named there
        _compare(exercise, function, case, mine, engine)


def _compare(exercise, function, case, mine, engine):
    out, grads = _value_and_grads(exercise, mine, case, f"{function.__name__}:", graded=True)
    want, want_grads = _value_and_grads(exercise, engine, case, "the engine's op:")
    if out.shape != want.shape or not np.allclose(out, want, rtol=1e-9, atol=1e-12):
        raise ExerciseFailed(f"{function.__name__}: forward differs from the engine's op on {case.text}: "
                             f"{_difference(out, want)}")
    leaves = _leaves(case)
    try:
        gradcheck(lambda *ts: mine(ts), leaves)
    except GradcheckError as e:
        raise ExerciseFailed(f"{function.__name__}: backward disagrees with central finite differences of its forward "
                             f"on {case.text}: {e}") from None
    for i, (g, w) in enumerate(zip(grads, want_grads)):
        if g is not None and not np.allclose(g, w, rtol=1e-7, atol=1e-10):
            raise ExerciseFailed(f"{function.__name__}: the gradient of input {i} differs from the engine's on "
                                 f"{case.text}: {_difference(g, w)}")


def _difference(got, want):
    if got.shape != want.shape:
        return f"shape {got.shape}, expected {want.shape}"
    error = np.abs(got - want)
    error[np.isnan(error)] = np.inf
    j = np.unravel_index(int(np.argmax(error)), got.shape) if got.ndim else ()
    return f"at index {tuple(int(k) for k in j)} got {got[j]!r}, expected {want[j]!r}"
