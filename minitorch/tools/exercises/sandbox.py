"""sandbox(): the grader runs a student's op as the engine would break it, so that what would break in training fails
the check whatever its numbers.

Inside the block every op's forward gets read-only views of its array inputs and its backward read-only copies of
the incoming gradients and of what forward saved: in the engine an input is a leaf's data or another op's output,
that other ops read too, and the walk hands one g to several ops (an Add's two inputs) and may hand a read-only one
(a sum's broadcast). A write raises, and is named: "your backward writes into g", "your forward changes its input
a". Forward's inputs are compared with a copy after forward and after backward (a write that got past the flags);
a float32 input must give a float32 output and gradient (training runs in float32: a float64 array in the middle
turns every op after it into float64); with strict=True, a gradient must be shaped like its input
(strict_shapes.py).
It reaches the walk through the engine's one extension point, `core.op_hook`.
"""
import contextlib
import inspect

import numpy as np

from ...core import op_hook
from ...gradcheck_diagnosis import read_only_copy, writes_read_only
from .blame import files_of, where
from .strict_shapes import check_shapes


class Broken(RuntimeError):
    """A graded op wrote into what it was given, or returned another dtype: the message says what and where."""


class WrongDtype(Broken):
    """A graded op returned another float dtype than its input's (a mistake beside its derivation's, if any)."""


def _frozen_view(value):
    if not isinstance(value, np.ndarray) or not value.flags.writeable:
        return value
    value = value.view()
    value.setflags(write=False)
    return value


def _parameters(method, n, default):
    """The names of method's first n parameters after self (g; gh and gc), for the messages."""
    try:
        names = [p for p in inspect.signature(method).parameters if p != "self"]
    except (TypeError, ValueError):
        names = []
    return [names[k] if k < len(names) and names[k] not in ("args", "kwargs") else f"{default} {k}"
            for k in range(n)]


def _float_dtype(arrays):
    """The one float dtype of the float arrays among `arrays`, or None (none, or several)."""
    kinds = {a.dtype for a in arrays if isinstance(a, np.ndarray) and a.dtype.kind == "f"}
    return kinds.pop() if len(kinds) == 1 else None


NEW_ARRAY = ("compute a new array instead (np.exp(a), not np.exp(a, out=a); x = x - m, not x -= m; g / b, not "
             "g /= b)")


class _Guard:
    """The op hook of sandbox(): remembers each op's inputs (and their copies) from its forward to its backward."""

    def __init__(self, strict):
        self.strict, self.inputs = strict, {}

    def __call__(self, op, phase, args, options):
        return self.forward(op, args, options) if phase == "forward" else self.backward(op, args)

    def forward(self, op, args, options):
        names = _parameters(type(op).forward, len(args), "input")
        given = [(names[k], a, a.copy()) for k, a in enumerate(args) if isinstance(a, np.ndarray)]
        try:
            out = op.forward(*[_frozen_view(a) for a in args], **options)
        except ValueError as e:
            if not writes_read_only(e):
                raise
            copies = [np.array(a) if isinstance(a, np.ndarray) else a for a in args]
            fresh = type(op)()
            fresh.needs_input_grad = op.needs_input_grad
            watched = [(names[k], copies[k], a.copy()) for k, a in enumerate(args) if isinstance(a, np.ndarray)]
            written = _written(lambda: fresh.forward(*copies, **options), watched)
            target = written or ", ".join(name for name, _, _ in given)
            raise Broken(f"{type(op).__name__}: your forward changes its input {target}: forward's inputs belong to "
                         f"the caller (a leaf's data, an output that other ops read too), so they are read-only here: "
                         f"{NEW_ARRAY}{where(e, files_of(type(op)))}") from None
        self._unchanged(op, given, "forward")
        self.inputs[op] = given
        dtype = _float_dtype(args)
        for r in out if isinstance(out, tuple) else (out,):
            kind = getattr(r, "dtype", None)
            if dtype is not None and kind is not None and kind.kind == "f" and kind != dtype:
                raise WrongDtype(f"{type(op).__name__}: your forward returns {kind} for {dtype} inputs: training runs "
                                 f"in float32, and an op keeps its inputs' dtype: make new arrays in it (np.zeros("
                                 f"shape, dtype=x.dtype), a Python float rather than an np.float64 scalar as a factor)")
        return out

    def backward(self, op, grads_in):
        names = _parameters(type(op).backward, len(grads_in), "g")
        frozen = tuple(read_only_copy(g) for g in grads_in)
        saved = op.saved_tensors
        op.saved_tensors = tuple(read_only_copy(v) for v in saved) if isinstance(saved, tuple) else saved
        try:
            grads = op.backward(*frozen)
        except ValueError as e:
            if not writes_read_only(e):
                raise
            op.saved_tensors = tuple(np.array(v) if isinstance(v, np.ndarray) else v for v in saved)
            copies = [np.array(g) if isinstance(g, np.ndarray) else g for g in grads_in]
            watched = [(names[k], copies[k], g.copy()) for k, g in enumerate(grads_in) if isinstance(g, np.ndarray)]
            watched += [(f"self.saved_tensors[{k}]", op.saved_tensors[k], v.copy()) for k, v in enumerate(saved)
                        if isinstance(v, np.ndarray)]
            written = _written(lambda: op.backward(*copies), watched)
            place = where(e, files_of(type(op)))
            if written in names:
                raise Broken(f"{type(op).__name__}: your backward writes into {written} (the incoming gradient "
                             f"dL/d(out)): the engine hands the same g to several ops (an Add's two inputs) and may "
                             f"hand a read-only one (a sum's broadcast): {NEW_ARRAY}{place}") from None
            raise Broken(f"{type(op).__name__}: your backward writes into {written or 'an array it was given'}: what "
                         f"forward saved is read again when backward runs twice (retain_graph=True), and a saved "
                         f"input is its leaf's data: {NEW_ARRAY}{place}") from None
        finally:
            op.saved_tensors = saved
        self._unchanged(op, self.inputs.get(op, ()), "backward")
        self._dtypes(op, grads)
        return check_shapes(op, grads) if self.strict else grads

    def _dtypes(self, op, grads):
        for k, (grad, parent, needs) in enumerate(zip(grads if isinstance(grads, tuple) else (grads,), op.parents,
                                                      op.needs_input_grad)):
            want = getattr(parent, "out_dtype", None)
            if needs and isinstance(grad, np.ndarray) and want is not None and want.kind == "f" and grad.dtype != want:
                name = _parameters(type(op).forward, len(op.parents), "input")[k]
                raise WrongDtype(f"{type(op).__name__}: your backward returns dL/d{name} in {grad.dtype} for an "
                                 f"input {name} in {want}: a gradient has its input's dtype (training runs in "
                                 f"float32): make new arrays in it (np.zeros(shape, dtype=g.dtype), np.eye(n, "
                                 f"dtype=x.dtype))")

    def _unchanged(self, op, given, phase):
        for name, array, copy in given:
            if not np.array_equal(array, copy, equal_nan=True):
                raise Broken(f"{type(op).__name__}: your {phase} changes its input {name}: forward's inputs belong to "
                             f"the caller (a leaf's data, an output that other ops read too): {NEW_ARRAY}")


def _written(rerun, watched):
    """The name of the first watched array (name, writable copy, its value before) that rerun() changes, or ''."""
    try:
        rerun()
    except Exception:
        pass
    return next((name for name, array, before in watched if not np.array_equal(array, before, equal_nan=True)), "")


@contextlib.contextmanager
def sandbox(strict=True):
    """Inside this block (in this thread) an op that writes into its inputs, its incoming gradients or what it saved
    raises Broken, as does one that changes float32 into float64; with strict, one whose gradient is not shaped like
    its input raises strict shapes' error."""
    with op_hook(_Guard(strict)):
        yield


__all__ = ["Broken", "WrongDtype", "sandbox"]
