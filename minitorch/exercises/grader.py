"""Grading one exercise: the student's Function against central finite differences (its own forward, float64) and
against the engine's own op (values and gradients), on hypothesis-drawn shapes and options."""
import numpy as np

from ..gradcheck import GradcheckError, gradcheck
from ..tensor import Tensor

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


def _value_and_grads(exercise, call, case, who):
    """call(tensors) and the gradients of sum(w * out) for fixed random weights w: (out array, [grad arrays])."""
    leaves = _leaves(case)
    stage = "forward"
    try:
        out = call(leaves)
        weights = np.random.default_rng(1).standard_normal(out.shape)
        stage = "backward"
        (out * Tensor._make(weights)).sum().backward()
    except NotImplementedError:
        raise ExerciseFailed(f"{who} {stage} is not written yet (it raises NotImplementedError)") from None
    except ExerciseFailed:
        raise
    except Exception as e:
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
    out, grads = _value_and_grads(exercise, mine, case, f"{function.__name__}:")
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
