"""Grading one exercise: the student's Function against central finite differences (its own forward, float64) and
against the engine's own op (values and gradients), on shapes and options drawn from a fixed seed (drawing.py)."""
import re

import numpy as np

from ... import backend
from ...core.grad_mode import no_grad
from ...tensor import Tensor
from ...gradcheck_diagnosis import read_only_copy
from .blame import files_of, read, where
from .failure import ExerciseFailed
from .sandbox import Broken, WrongDtype, sandbox
from .diagnose import diagnose, show

class _Touched(Exception):
    pass


class _Poison:
    """Stands in for a saved array: any use of it (arithmetic, a NumPy function, an attribute) raises _Touched."""
    __array_ufunc__ = None   # NumPy's operators and ufuncs defer to this object, which refuses

    def __getattr__(self, name):
        raise _Touched(name)

    def _touch(self, *args, **kwargs):
        raise _Touched()

    for _name in ("add", "sub", "mul", "truediv", "matmul", "pow", "floordiv", "mod"):
        locals()[f"__{_name}__"] = locals()[f"__r{_name}__"] = _touch
    __neg__ = __pos__ = __abs__ = __getitem__ = __array__ = __len__ = __iter__ = __float__ = __bool__ = _touch
    __lt__ = __le__ = __gt__ = __ge__ = __eq__ = __ne__ = _touch
    __hash__ = object.__hash__


def unused_saved(exercise, function, case):
    """Notes on the arrays forward declares with save_for_backward that backward never reads: backward is run
    again with each saved array replaced by a poison object, and an array whose poison is never touched is unused."""
    leaves = _leaves(case)
    with np.errstate(all="ignore"):
        out = exercise.apply(function, leaves, case.options)
        op = out._op
        if op is None:
            return []
        saved, g, notes = tuple(op.saved_tensors), np.ones(out.shape), []
        for k, value in enumerate(saved):
            if not (backend.is_array(value) or isinstance(value, np.generic)):   # (a 0-d result may be a scalar)
                continue
            op.saved_tensors = saved[:k] + (_Poison(),) + saved[k + 1:]
            try:
                op.backward(g)
            except Exception:
                continue   # touched (or failed without it): backward reads it
            finally:
                op.saved_tensors = saved
            notes.append(f"{function.__name__}: saved value {k} ({value.dtype} {np.shape(value)}) is declared with "
                         f"save_for_backward but backward never reads it: save only what backward reads")
    return notes


def _leaves(case):
    """The case's arrays as leaves, read-only as the data a student's op is given must be treated (sandbox.py)."""
    return [None if a is None else Tensor._make(read_only_copy(a), requires_grad=True) for a in case.arrays]


# what the engine reads on an op beside plain attributes: its graph parents, what it saved, and `kept`: what forward
# keeps for speed, which the engine releases with saved_tensors and drops under create_graph (core/function.py)
APPLY_ATTRIBUTES = {"parents", "saved_tensors", "kept"}


def _arrays_kept_as_attributes(student_op):
    """(name, array) for each array the student's op keeps as a plain attribute (one level into tuples and lists)
    instead of declaring it with save_for_backward: feedback for the student (the engine never scans an op)."""
    saved = {id(v) for v in student_op.saved_tensors}
    for name, value in vars(student_op).items():
        if name in APPLY_ATTRIBUTES:
            continue
        for item in value if isinstance(value, (tuple, list)) else (value,):
            if backend.is_array(item) and id(item) not in saved:
                yield name, item


def _value_and_grads(exercise, call, case, who, graded=None):
    """call(tensors) and the gradients of sum(w * out) for fixed random weights w (in out's dtype): (out array,
    [grad arrays], w). graded: the student's Function (or None), whose saved state is checked too, and whose file an
    exception is traced back to."""
    leaves = _leaves(case)
    stage = "forward"
    try:
        out = call(leaves)
        kept = next(_arrays_kept_as_attributes(out._op), None) if graded is not None and out._op is not None else None
        if kept is not None:
            name, array = kept
            raise ExerciseFailed(f"{who} forward keeps an array as self.{name} ({array.dtype} {array.shape}): declare "
                                 f"every array backward reads with self.save_for_backward(...) and read them back in "
                                 f"backward with self.saved_tensors (Python values such as dims and flags stay plain "
                                 f"attributes)")
        weights = np.random.default_rng(1).standard_normal(out.shape)
        stage = "backward"
        (out * Tensor._make(weights.astype(out.dtype))).sum().backward()
    except NotImplementedError:
        raise ExerciseFailed(f"{who} {stage} is not written yet (it raises NotImplementedError)") from None
    except ExerciseFailed:
        raise
    except Broken as e:
        broken = ExerciseFailed(f"{e}\n  on {case.text}")
        broken.sandbox = "dtype" if isinstance(e, WrongDtype) else "write"
        raise broken from None
    except Exception as e:
        # the engine checks what backward returns: "... incorrect number of gradients (expected n, got m)"
        count = re.search(r"incorrect number of gradients \(expected (\d+), got (\d+)\)", str(e))
        if count is not None:
            expected, got = map(int, count.groups())
            inputs = f"the {expected} input{'s' * (expected != 1)} of apply"
            raise ExerciseFailed(f"{who} backward returned {got} gradient{'s' * (got != 1)} for {inputs} on "
                                 f"{case.text}: return a tuple of one gradient per input, in order, with None for an "
                                 f"input that gets none (a mask, a target)") from None
        if str(e).startswith("strict shapes:"):
            raise ExerciseFailed(f"{who} wrong-shaped gradient on {case.text}: {e}") from None
        place = where(e, files_of(graded)) if graded is not None else ""
        batched = _batched_transpose(case, e) if ".T" in place or not place else ""   # (a .T on the line, if known)
        raise ExerciseFailed(f"{who} {stage} failed on {case.text}: {type(e).__name__}: {e}{place}"
                             f"{read(e) if place else ''}{batched}") from e
    grads = [None if t is None else (np.zeros(t.shape) if t.grad is None else t.grad.numpy()) for t in leaves]
    return out.numpy(), grads, weights


def _batched_transpose(case, error):
    """The diagnosis of `.T` on a batched array: NumPy's error for the shapes it makes, on a case of 3 or more dims."""
    batched = any(a is not None and a.ndim >= 3 for a in case.arrays)
    shapes = isinstance(error, ValueError) and re.search(r"core dimension|could not be broadcast|not aligned",
                                                         str(error))
    if not (batched and shapes):
        return ""
    return ("\n  diagnosis: if you transposed with .T: on a batched array (3 or more dims) .T reverses every axis "
            "((B, n, k).T is (k, n, B)); transpose the last two with x.swapaxes(-1, -2)")


def check_case(exercise, function, case, strict=True):
    """One drawn case of an op exercise: raise ExerciseFailed naming what differs, with the case and a diagnosis."""
    def mine(tensors):
        return exercise.apply(function, tensors, case.options)

    def engine(tensors):
        return exercise.reference(tensors, case.options)

    with np.errstate(all="ignore"):  # an overflow or 0/0 shows as inf or nan in the comparison, named there
        try:
            _compare(exercise, function, case, mine, engine, strict)
        except ExerciseFailed as failure:
            gradients = any(f": {what} " in str(failure) for what in ("backward disagrees", "the gradient of input"))
            if case.options.get("dropout_p") and gradients:  # does a gradient fail only with dropout on?
                quiet = type(case)(case.arrays, {**case.options, "dropout_p": 0.0}, case.text)
                try:
                    check_case(exercise, function, quiet, strict)
                except ExerciseFailed:
                    raise failure from None
                raise ExerciseFailed(f"{failure}\n  it fails only with dropout on (dropout_p="
                                     f"{case.options['dropout_p']:g}); the same case with dropout_p=0 passes: check "
                                     f"the keep mask and the scale 1/(1 - p) in backward") from None
            raise


def check_promise(exercise, function, case, hint, strict=True):
    """A case the stub promises (promises.py): the student's op against the engine's, in relative terms (at 1e200
    an absolute tolerance passes anything, and finite differences mean nothing), in the case's dtype."""
    name = function.__name__
    with np.errstate(all="ignore"):
        with sandbox(strict):
            out, grads, _ = _value_and_grads(exercise, lambda t: exercise.apply(function, t, case.options), case,
                                             f"{name}:", graded=function)
        want, want_grads, _ = _value_and_grads(exercise, lambda t: exercise.reference(t, case.options), case,
                                               "the engine's op:")
    diagnosis = f"\n  diagnosis: {hint}" if hint else ""
    for what, got, right in [("forward", out, want), *[(f"the gradient of input {i}", g, w)
                                                        for i, (g, w) in enumerate(zip(grads, want_grads))
                                                        if g is not None]]:
        if got.dtype != right.dtype:
            raise ExerciseFailed(f"{name}: {what} is {got.dtype} where the engine's is {right.dtype}, on {case.text}")
        loose = right.dtype == np.float32
        size = float(np.abs(right).max(initial=0))
        if got.shape != right.shape or not np.allclose(got, right, rtol=1e-4 if loose else 1e-7,
                                                       atol=(1e-5 if loose else 1e-12) * size):
            overflow = diagnosis if np.isfinite(right).all() else ""
            raise ExerciseFailed(f"{name}: {what} differs from the engine's op on {case.text}: "
                                 f"{_difference(got, right)}{overflow}\n{show(case.arrays, exercise.inputs)}")


def numerical_grads(call, case, weights, eps=1e-6):
    """Central finite differences of L = sum(weights * call(x)) for each input array (float64): the gradients an
    exact backward returns for the incoming gradient `weights`."""
    arrays = [None if a is None else np.array(a, dtype=np.float64) for a in case.arrays]

    def loss():
        with no_grad():
            out = call([None if a is None else Tensor._make(a.copy()) for a in arrays]).numpy()
        return float((weights * out).sum())

    grads = []
    for a in arrays:
        if a is None:
            grads.append(None)
            continue
        g = np.zeros_like(a)
        for j in np.ndindex(a.shape):
            kept = a[j]
            a[j] = kept + eps
            up = loss()
            a[j] = kept - eps
            down = loss()
            a[j] = kept
            g[j] = (up - down) / (2 * eps)
        grads.append(g)
    return grads


def _compare(exercise, function, case, mine, engine, strict):
    name = function.__name__
    # strict: the student's op only: the engine's ops hand broadcasting to the walk by design
    with sandbox(strict):
        out, grads, weights = _value_and_grads(exercise, mine, case, f"{name}:", graded=function)
    want, want_grads, _ = _value_and_grads(exercise, engine, case, "the engine's op:")
    if out.shape != want.shape or not np.allclose(out, want, rtol=1e-9, atol=1e-12):
        overflow = ""
        if out.shape == want.shape and not np.isfinite(out).all() and np.isfinite(want).all():
            overflow = f"\n  diagnosis: {_not_finite(exercise, case, out)}"
        raise ExerciseFailed(f"{name}: forward differs from the engine's op on {case.text}: "
                             f"{_difference(out, want)}{overflow}\n{show(case.arrays, exercise.inputs)}")
    numeric = numerical_grads(mine, case, weights)

    for i, (g, n) in enumerate(zip(grads, numeric)):
        if g is None or n is None:
            continue
        if g.shape != n.shape:
            raise ExerciseFailed(f"{name}: wrong-shaped gradient on {case.text}: the gradient of input {i} has shape "
                                 f"{g.shape}, the input {n.shape}")
        if not np.allclose(g, n, rtol=1e-3, atol=1e-5):
            raise ExerciseFailed(f"{name}: backward disagrees with central finite differences of its forward on "
                                 f"{case.text} (input {i}: {_difference(g, n)})"
                                 f"{diagnose(exercise, case, i, grads, numeric)}\n"
                                 + show(case.arrays, exercise.inputs, weights, grads, numeric, i,
                                        outputs=exercise.outputs))
    for i, (g, w) in enumerate(zip(grads, want_grads)):
        if g is not None and not np.allclose(g, w, rtol=1e-7, atol=1e-10):
            raise ExerciseFailed(f"{name}: the gradient of input {i} differs from the engine's on "
                                 f"{case.text}: {_difference(g, w)}"
                                 f"{diagnose(exercise, case, i, grads, want_grads)}\n"
                                 + show(case.arrays, exercise.inputs, weights, grads, want_grads, i,
                                        "engine", outputs=exercise.outputs))


SHIFTED = ("softmax", "log_softmax", "cross_entropy", "attention")   # the exercises whose forward exponentiates rows


def _not_finite(exercise, case, out):
    """Why a forward gives inf or nan where the engine's is finite, from what the case holds and what the exercise
    computes."""
    mask = case.options.get("mask")
    if mask is not None and out.ndim >= 2:
        empty = ~np.asarray(mask).any(axis=-1)             # the queries with nothing to attend to
        rows = np.nonzero(~np.isfinite(out).all(axis=-1))[-1]
        if len(rows) and empty[rows].all():
            return ("your forward gives inf or nan where the engine's is finite, on the rows of the mask with no True "
                    "(padding queries): their scores are all -inf and exp(-inf) / sum = 0/0; give them weights 0")
    if exercise.name in SHIFTED and any(a is not None and np.abs(a).max(initial=0) > 700 for a in case.arrays):
        return ("your forward overflows (inf or nan) where the engine's is finite: exp of an input past 709 is inf; "
                "subtract the max along the dim first (softmax(x) = softmax(x - max x))")
    return "your forward gives inf or nan where the engine's is finite: an overflow, or a division by zero"


def _difference(got, want):
    if got.shape != want.shape:
        return f"shape {got.shape}, expected {want.shape}"
    error = np.abs(got - want)
    error = np.where(np.isnan(error), np.inf, error)
    j = np.unravel_index(int(np.argmax(error)), got.shape) if got.ndim else ()
    return f"at index {tuple(int(k) for k in j)} got {float(got[j]):.6g}, expected {float(want[j]):.6g}"
