"""The graded exercises (minitorch/tools/exercises): every check passes on the engine's own code and on a solution
written here independently of the engine, and rejects at least two wrong solutions per exercise with the diagnosis
their mistake has (a missing sum over broadcast axes, a missing scale, rows that do not sum to 0, an overflow, ...);
the stubs are unfinished and say so; strict shapes in the engine's walk; the command works as documented."""
import contextlib
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from minitorch.autograd import Function
from minitorch.core.grad_mode import state
from minitorch.tools.exercises.strict_shapes import strict_shapes
from minitorch.tensor import Tensor
from minitorch.tools.exercises import EXAMPLES, EXERCISES, ExerciseFailed, check, reference
from minitorch.tools.exercises.harness import state as harness_state
from minitorch.tools.exercises.__main__ import STUBS, main
from minitorch.ops import normalize_dims
from minitorch.ops.dropout import keep_mask
from minitorch.ops.windows import im2col_array

ROOT = Path(__file__).resolve().parents[2]
NAMES = [e.name for e in EXERCISES]


# ----- a student's solutions, written from the stubs' statements (not from the engine's code); `mistake` selects
# one of the wrong backward passes that the checks must reject -----

class Solution(Function):
    mistake = None


def _summed_to(grad, shape):
    """grad summed over broadcast axes down to shape, one axis at a time (not the engine's unbroadcast)."""
    while grad.ndim > len(shape):
        grad = grad.sum(axis=0)
    for axis, n in enumerate(shape):
        if n == 1 and grad.shape[axis] != 1:
            grad = grad.sum(axis=axis, keepdims=True)
    return grad


class Mul(Solution):
    def forward(self, a, b):
        self.save_for_backward(a, b)
        return a * b

    def backward(self, g):
        a, b = self.saved_tensors
        da, db = (g * a, g * b) if self.mistake == "swapped" else (g * b, g * a)
        if self.mistake == "doubled":
            da, db = 2 * da, 2 * db
        if self.mistake == "no broadcast sum":
            return da, db
        return _summed_to(da, a.shape), _summed_to(db, b.shape)


class Div(Solution):
    def forward(self, a, b):
        self.save_for_backward(a, b)
        return a / b

    def backward(self, g):
        a, b = self.saved_tensors
        sign = 1 if self.mistake == "sign" else -1
        da, db = g / b, sign * (g / b) * (a / b)
        if self.mistake == "no broadcast sum":
            return da, db
        return _summed_to(da, a.shape), _summed_to(db, b.shape)


class Sum(Solution):
    def forward(self, a, dim=None, keepdim=False):
        self.shape, self.dims, self.keepdim = a.shape, normalize_dims(dim, a.ndim), keepdim
        return a.sum(axis=self.dims, keepdims=keepdim)

    def backward(self, g):
        if self.mistake == "no re-broadcast":
            return g
        if not self.keepdim and self.mistake != "summed dims not put back":
            g = np.expand_dims(g, self.dims)
        return np.broadcast_to(g, self.shape) * self.scale()

    def scale(self):
        return 1.0


class Mean(Sum):
    def forward(self, a, dim=None, keepdim=False):
        out = super().forward(a, dim, keepdim)
        self.count = int(np.prod([a.shape[d] for d in self.dims]))
        return out / self.count

    def scale(self):
        return 1.0 if self.mistake == "no 1/count" else 1.0 / self.count


class MatMul(Solution):
    def forward(self, a, b):
        self.save_for_backward(a, b)
        return a @ b

    def backward(self, g):
        a, b = self.saved_tensors
        db = g.swapaxes(-1, -2) @ a if self.mistake == "transposed db" else a.swapaxes(-1, -2) @ g
        da = g @ b.swapaxes(-1, -2)
        if self.mistake == ".T on batched arrays":
            da, db = g @ b.T, a.T @ g
        if self.mistake == "no batch sum":
            return da, db
        return _summed_to(da, a.shape), _summed_to(db, b.shape)


class Exp(Solution):
    def forward(self, a):
        out = np.exp(a)
        self.save_for_backward(out)
        return out

    def backward(self, g):
        out, = self.saved_tensors
        if self.mistake == "two gradients":
            return g * out, g * out
        return g if self.mistake == "dropped factor" else g * out


class Log(Solution):
    def forward(self, a):
        self.save_for_backward(a)
        return np.log(a)

    def backward(self, g):
        a, = self.saved_tensors
        if self.mistake == "dropped factor":
            return g
        return -g / a if self.mistake == "sign" else g / a


def _shifted(x, dim):
    m = x.max(axis=dim, keepdims=True)
    return x - np.where(np.isneginf(m), 0, m)


class Softmax(Solution):
    def forward(self, x, dim):
        e = np.exp(x if self.mistake == "no max shift" else _shifted(x, dim))
        y = e / e.sum(axis=dim, keepdims=True)
        self.save_for_backward(y)
        self.dim = dim
        return y

    def backward(self, g):
        y, = self.saved_tensors
        if self.mistake == "dropped term":
            return y * g
        return y * (g - (g * y).sum(axis=self.dim, keepdims=True))


class LogSoftmax(Solution):
    def forward(self, x, dim):
        z = _shifted(x, dim)
        y = z - np.log(np.exp(z).sum(axis=dim, keepdims=True))
        self.save_for_backward(y)
        self.dim = dim
        return y

    def backward(self, g):
        y, = self.saved_tensors
        total = g if self.mistake == "no row sum" else g.sum(axis=self.dim, keepdims=True)
        return g - np.exp(y) * total


class LogSoftmaxUnshifted(LogSoftmax):
    def forward(self, x, dim):
        if self.mistake != "no max shift":
            return super().forward(x, dim)
        y = np.log(np.exp(x) / np.exp(x).sum(axis=dim, keepdims=True))
        self.save_for_backward(y)
        self.dim = dim
        return y


class CrossEntropy(Solution):
    def forward(self, x, target, ignore_index, label_smoothing, reduction):
        n, c = x.shape
        valid = target != ignore_index
        e = 0.0 if self.mistake == "smoothing dropped in backward" else label_smoothing
        q = (1 - label_smoothing) * np.eye(c, dtype=x.dtype)[np.where(valid, target, 0)] + label_smoothing / c
        z = _shifted(x, 1)
        log_p = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
        self.reduction, self.n_valid = reduction, max(int(valid.sum()), 1)
        # the soft targets backward subtracts (without smoothing for the mistake)
        self.save_for_backward(np.exp(log_p), (1 - e) * np.eye(c, dtype=x.dtype)[np.where(valid, target, 0)] + e / c,
                               valid)
        loss = -(q * log_p).sum(axis=1) * valid
        return {"none": loss, "sum": np.asarray(loss.sum()), "mean": np.asarray(loss.sum() / self.n_valid)}[reduction]

    def backward(self, g):
        p, q, valid = self.saved_tensors
        s = g * valid
        if self.reduction == "mean" and self.mistake == "mean over all rows":
            s = s / len(valid)
        elif self.reduction == "mean" and self.mistake != "mean not divided":
            s = s / self.n_valid
        return (p - q) * s[:, None], None


class LayerNorm(Solution):
    def forward(self, x, weight, bias, normalized_ndim, eps):
        self.shape, self.w_shape = x.shape, x.shape[x.ndim - normalized_ndim:]
        n = int(np.prod(self.w_shape))
        rows = x.reshape(-1, n)
        centered = rows - rows.mean(axis=1, keepdims=True)
        rstd = 1 / np.sqrt((centered ** 2).mean(axis=1, keepdims=True) + eps)
        xhat = centered * rstd
        self.save_for_backward(xhat, rstd, weight)
        self.has_b = bias is not None
        y = xhat if weight is None else xhat * weight.reshape(n)
        return (y if bias is None else y + bias.reshape(n)).reshape(x.shape)

    def backward(self, g):
        xhat, rstd, w = self.saved_tensors
        g = g.reshape(xhat.shape)
        gh = g if w is None else g * w.reshape(-1)
        dx = gh if self.mistake == "dropped mean term" else gh - gh.mean(axis=1, keepdims=True)
        if self.mistake == "sign of the xhat term":
            dx = dx + xhat * (gh * xhat).mean(axis=1, keepdims=True)
        elif self.mistake != "dropped xhat term":
            dx = dx - xhat * (gh * xhat).mean(axis=1, keepdims=True)
        if self.mistake == "dw not summed over rows" and w is not None:
            dw = (g * xhat).reshape(self.shape[:len(self.shape) - len(self.w_shape)] + self.w_shape)
        else:
            dw = None if w is None else (g * xhat).sum(axis=0).reshape(self.w_shape)
        db = g.sum(axis=0).reshape(self.w_shape) if self.has_b else None
        return (dx * rstd).reshape(self.shape), dw, db


class ScaledDotProductAttention(Solution):
    def forward(self, q, k, v, mask, words, dropout_p):
        self.scale = 1 / float(np.sqrt(q.shape[-1]))   # a Python float: float32 stays float32
        s = q @ k.swapaxes(-1, -2) * self.scale
        if mask is not None:
            s = np.where(mask, s, -np.inf)
        e = np.exp(_shifted(s, -1))
        total = e.sum(axis=-1, keepdims=True)
        w = e / np.where(total == 0, 1, total)
        keep = keep_mask(words, dropout_p) if dropout_p else None
        self.save_for_backward(q, k, v, w, keep)
        self.dropout_scale = 1 / (1 - dropout_p)
        return (w if keep is None else w * keep * self.dropout_scale) @ v

    def backward(self, g):
        q, k, v, w, keep = self.saved_tensors
        a = w if keep is None else w * keep * self.dropout_scale
        dw = g @ v.swapaxes(-1, -2)
        if keep is not None and self.mistake != "dropout scale dropped in backward":
            dw = dw * keep * self.dropout_scale
        ds = w * (dw - (dw * w).sum(axis=-1, keepdims=True))
        dk_sign = -1 if self.mistake == "sign of dk" else 1
        scale = 1.0 if self.mistake == "no 1/sqrt(d) in backward" else self.scale
        grads = ds @ k * scale, dk_sign * ds.swapaxes(-1, -2) @ q * scale, a.swapaxes(-1, -2) @ g
        return grads if self.mistake == "no None for the mask and the words" else grads + (None, None)


def _sigmoid(a):
    return 1 / (1 + np.exp(-a))


class LSTMCellFunction(Solution):
    def forward(self, gates, c_prev):
        i, f, g, o = np.split(gates, 4, axis=-1)
        i, f, g, o = _sigmoid(i), _sigmoid(f), np.tanh(g), _sigmoid(o)
        c = f * c_prev + i * g
        tanh_c = np.tanh(c)
        self.save_for_backward(i, f, g, o, c_prev, tanh_c)
        return o * tanh_c, c

    def backward(self, gh, gc):
        i, f, g, o, c_prev, tanh_c = self.saved_tensors
        dc = gh * o * (1 - tanh_c ** 2) + (0 if self.mistake == "gc dropped" else gc)
        d_gates = np.concatenate([dc * g * i * (1 - i), dc * c_prev * f * (1 - f), dc * i * (1 - g ** 2),
                                  gh * tanh_c * o * (1 - o)], axis=-1)
        return d_gates if self.mistake == "one gradient" else (d_gates, dc * f)


class Conv2d(Solution):
    def forward(self, x, weight, bias, *, w):
        cols = im2col_array(x, w)
        n, c, kh, kw, ho, wo = cols.shape
        cols2 = cols.reshape(n, c * kh * kw, ho * wo)
        self.save_for_backward(weight, cols2)
        self.w, self.x_shape = w, x.shape
        return (np.einsum("ok,nkl->nol", weight.reshape(len(weight), -1), cols2) + bias[:, None]).reshape(
            n, len(weight), ho, wo)

    def backward(self, g):
        weight, cols2 = self.saved_tensors
        (n, c, h, width), (o, _, kh, kw), w = self.x_shape, weight.shape, self.w
        ho, wo = g.shape[2:]
        g2 = g.reshape(n, o, ho * wo)
        d_weight = np.einsum("nol,nkl->ok", g2, cols2).reshape(weight.shape)
        d_bias = g.sum(axis=0) if self.mistake == "bias summed over the batch only" else g.sum(axis=(0, 2, 3))
        d_cols = np.einsum("ok,nol->nkl", weight.reshape(o, -1), g2).reshape(n, c, kh, kw, ho, wo)
        padded = np.zeros((n, c, h + 2 * w.ph, width + 2 * w.pw), dtype=g.dtype)
        for i in range(kh):
            for j in range(kw):
                rows = slice(i * w.dh, i * w.dh + w.sh * (ho - 1) + 1, w.sh)
                cols = slice(j * w.dw, j * w.dw + w.sw * (wo - 1) + 1, w.sw)
                if self.mistake == "col2im assigns":
                    padded[:, :, rows, cols] = d_cols[:, :, i, j]
                else:
                    padded[:, :, rows, cols] += d_cols[:, :, i, j]
        return padded[:, :, w.ph:w.ph + h, w.pw:w.pw + width], d_weight, d_bias


# ----- the exercises on the engine itself: wrong versions of the reference solutions (exercises/reference.py) -----

def topo_no_visited_set(root):
    order = []

    def visit(node):
        for parent in node.parents:
            visit(parent)
        order.append(node)
    visit(root)
    return order[::-1]


def topo_not_reversed(root):
    return reference.topological_order(root)[::-1]


def topo_without_leaves(root):
    return [v for v in reference.topological_order(root) if v.parents]


def backward_assigns(order):
    for node in order:
        if node.grad is not None and node.backward_fn is not None:
            for parent, g in zip(node.parents, node.backward_fn(node.grad)):
                parent.grad = g


def backward_walks_leaves_first(order):
    reference.backward(order[::-1])


def backward_adds_in_place(order):
    for node in order:
        if node.grad is None or node.backward_fn is None:
            continue
        for parent, g in zip(node.parents, node.backward_fn(node.grad)):
            if parent.grad is None:
                parent.grad = g
            else:
                parent.grad += g


def unbroadcast_no_leading_sum(grad, shape):
    extra = grad.ndim - len(shape)
    stretched = tuple(i + extra for i, n in enumerate(shape) if n == 1 and grad.shape[i + extra] != 1)
    return grad.sum(axis=stretched, keepdims=True) if stretched else grad


def unbroadcast_no_keepdims(grad, shape):
    grad = grad.sum(axis=tuple(range(grad.ndim - len(shape))))
    stretched = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    return grad.sum(axis=stretched) if stretched else grad


def unbroadcast_mean(grad, shape):
    grad = grad.mean(axis=tuple(range(grad.ndim - len(shape))))
    stretched = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    return grad.mean(axis=stretched, keepdims=True) if stretched else grad


@contextlib.contextmanager
def no_grad_restores_true():
    harness_state.grad_enabled = False
    try:
        yield
    finally:
        harness_state.grad_enabled = True


@contextlib.contextmanager
def no_grad_without_finally():
    previous = harness_state.grad_enabled
    harness_state.grad_enabled = False
    yield
    harness_state.grad_enabled = previous


ENGINE_MISTAKES = {
    "topo_sort": {"no visited set": (topo_no_visited_set, r"lists n\d+ twice .*keep a set of the nodes visited"),
                  "not reversed": (topo_not_reversed, r"does not start with the root|before n\d+, which uses it"),
                  "leaves left out": (topo_without_leaves, r"nodes where \d+ are reachable")},
    "backward": {"assigns": (backward_assigns, r"kept only its last gradient: add the gradients"),
                 "leaves first": (backward_walks_leaves_first, r"left n\d+\.grad None .*diagnosis: walk from the root: "
                                                               r"reverse topological order"),
                 "in place": (backward_adds_in_place, r"in-place \+= into a gradient array that another node "
                                                      r"shares")},
    "unbroadcast": {"no leading sum": (unbroadcast_no_leading_sum, r"leading axes that broadcasting added"),
                    "no keepdims": (unbroadcast_no_keepdims, r"without keepdims=True"),
                    "mean": (unbroadcast_mean, r"the mean over the broadcast axes: sum, do not average")},
    "no_grad": {"restores True": (no_grad_restores_true, r"restore the mode the block found"),
                "no finally": (no_grad_without_finally, r"restore the mode in a finally")},
}

SOLUTIONS = {"topo_sort": reference.topological_order, "backward": reference.backward,
             "unbroadcast": reference.unbroadcast, "no_grad": reference.no_grad,
             "mul": Mul, "div": Div, "sum": Sum, "mean": Mean, "matmul": MatMul, "exp": Exp, "log": Log,
             "softmax": Softmax, "log_softmax": LogSoftmaxUnshifted, "cross_entropy": CrossEntropy,
             "layer_norm": LayerNorm, "attention": ScaledDotProductAttention, "lstm_cell": LSTMCellFunction,
             "conv2d": Conv2d}
GENERIC = r"differs|disagrees|failed"
BROADCAST = r"wrong-shaped gradient .*sum it over the broadcast axes"
# mistake -> what the failure must say (its diagnosis where the mistake has a signature)
MISTAKES = {
    "mul": {"swapped": r"your dL/da is the right dL/db: the two gradients are swapped", "no broadcast sum": BROADCAST,
            "doubled": r"constant ratio 2 .*factor 2 too large"},
    "div": {"sign": r"dL/db's minus sign .*sign flipped", "no broadcast sum": BROADCAST},
    "sum": {"no re-broadcast": r"wrong-shaped gradient .*it must have the input's shape",
            "summed dims not put back": GENERIC},
    "mean": {"no 1/count": r"the mean's 1/n \(n = \d+, the count of elements averaged into each output\) is missing",
             "summed dims not put back": GENERIC},
    "matmul": {"transposed db": r"your dL/db is the right one transposed|dL/db .* shaped like the right one "
                                r"transposed|shaped like the input transposed",
               "no batch sum": BROADCAST,
               ".T on batched arrays": r"\.T on a batched array reverses every axis .*x\.swapaxes\(-1, -2\)"},
    "exp": {"dropped factor": GENERIC, "two gradients": r"backward returned 2 gradients for the 1 input of apply"},
    "log": {"sign": r"dL/da has its sign flipped", "dropped factor": GENERIC},
    "softmax": {"dropped term": r"the row-sum term sum\(g \* y\) along dim .* is missing",
                "no max shift": r"forward overflows .*subtract the max"},
    "log_softmax": {"no row sum": r"the row sum of g is missing",
                    "no max shift": r"forward overflows .*subtract the max"},
    "cross_entropy": {"smoothing dropped in backward": r"without label smoothing: backward leaves out the "
                                                       r"smoothing",
                      "mean not divided": r"division by the count of rows that are not ignored \(n_valid = \d+\) is "
                                          r"missing",
                      "mean over all rows": r"'mean' divided by all \d+ rows where it divides by the \d+ rows that are "
                                            r"not ignored"},
    "layer_norm": {"dropped xhat term": r"dL/dx's xhat term .* is missing",
                   "sign of the xhat term": r"dL/dx's xhat term .* has its sign flipped",
                   "dropped mean term": r"dL/dx's mean term .* is missing",
                   "dw not summed over rows": BROADCAST},
    "attention": {"dropout scale dropped in backward": r"without the keep mask and the scale 1/\(1 - p\), as if "
                                                       r"dropout were off: backward leaves out the keep mask(.|\n)*"
                                                       r"fails only with dropout on",
                  "no 1/sqrt(d) in backward": r"the scale 1/sqrt\(d\) of dq and dk \(d = (\d): 1/sqrt\(\1\) = "
                                              r"1/\d\.\d+\) is missing",
                  "sign of dk": GENERIC},
    "lstm_cell": {"gc dropped": GENERIC, "one gradient": r"backward returned 1 gradient for the 2 inputs of apply"},
    "conv2d": {"col2im assigns": r"wrong where windows overlap: col2im must add",
               "bias summed over the batch only": r"wrong-shaped gradient"},
}
OPS = list(MISTAKES)


def with_mistake(name, mistake):
    solution = SOLUTIONS[name]
    return type(solution.__name__, (solution,), {"mistake": mistake})


def test_the_sequence_starts_with_the_engine_then_the_ops_of_the_issue_in_order():
    assert NAMES == ["topo_sort", "backward", "unbroadcast", "no_grad", "mul", "div", "sum", "mean", "matmul", "exp",
                     "log", "softmax", "log_softmax", "cross_entropy", "layer_norm", "attention", "lstm_cell",
                     "conv2d"]
    assert set(SOLUTIONS) == set(MISTAKES) | set(ENGINE_MISTAKES) == set(NAMES)
    assert all(len(m) >= 2 for m in [*MISTAKES.values(), *ENGINE_MISTAKES.values()])


@pytest.mark.parametrize("name", NAMES)
def test_the_engines_own_code_passes(name):
    assert check(name) == EXAMPLES


@pytest.mark.parametrize("name", NAMES)
def test_a_solution_written_independently_of_the_engine_passes(name):
    notes = []
    assert check(name, SOLUTIONS[name], notes=notes) == EXAMPLES
    assert notes == []


def _failure(name, function):
    with pytest.raises(ExerciseFailed) as failure:
        check(name, function)
    text = str(failure.value)
    assert "np.float64" not in text and "array(" not in text, text   # plain numbers
    assert re.search(rf"replay: it is case \d+ of `python3 -m minitorch.tools.exercises check {name} ", text), text
    return text


@pytest.mark.parametrize("name, mistake", [(n, m) for n in OPS for m in MISTAKES[n]])
def test_a_wrong_op_is_rejected_with_its_diagnosis(name, mistake):
    text = _failure(name, with_mistake(name, mistake))
    assert re.search(MISTAKES[name][mistake], text, re.S), text
    assert re.search(r"on \w+ \(", text), f"the message names no drawn case: {text}"
    if "disagrees" in text:  # the case, to be replayed by hand: input, incoming gradient, both gradients, difference
        incoming = "incoming gradient g_h = dL/dh" if name == "lstm_cell" else "incoming gradient g = dL/d(out)"
        for part in ("  input ", incoming, "your backward:",
                     "numerical (central differences):", "difference (yours - numerical):"):
            assert part in text, (part, text)


@pytest.mark.parametrize("name, mistake", [(n, m) for n in ENGINE_MISTAKES for m in ENGINE_MISTAKES[n]])
def test_a_wrong_engine_part_is_rejected_with_its_diagnosis(name, mistake):
    function, diagnosis = ENGINE_MISTAKES[name][mistake]
    text = _failure(name, function)
    assert re.search(diagnosis, text, re.S), text
    assert harness_state.grad_enabled   # a wrong no_grad does not leave the tiny engine off for the next check


@pytest.mark.parametrize("name", NAMES)
def test_no_case_has_rows_of_fewer_than_3_elements_or_equal_operands(name):
    """Each mistake shows on every case: on rows of 2 LayerNorm's xhat is +-1 and its true gradient ~0 (any answer
    whose rows sum to 0 looks like a scale); with a == b swapped operands pass; an input equal to the incoming
    gradient (drawn from seed 1) makes A^T G symmetric, so a transposed gradient passes."""
    from minitorch.tools.exercises.catalog import BY_NAME
    from minitorch.tools.exercises.drawing import draw_cases
    exercise = BY_NAME[name]
    for case in draw_cases(exercise, EXAMPLES):
        arrays = [a for a in case.arrays if a is not None]
        for a in arrays:   # a side of 1 is a broadcast input's, stretched over a row of another
            assert a.ndim >= 1 and a.shape[-1] in (1, *range(3, 100)), (case.text, a.shape)
            assert not np.allclose(a, np.random.default_rng(1).standard_normal(a.shape)), case.text
        assert max((a.shape[-1] for a in arrays), default=3) >= 3, case.text   # (no_grad draws no arrays)
        rows = getattr(exercise, "zero_sum", None)
        if rows is not None:
            axes = np.atleast_1d(rows(case))
            assert np.prod([arrays[0].shape[k] for k in axes]) >= 3, case.text
        for k, a in enumerate(arrays):
            for b in arrays[k + 1:]:
                assert a.shape != b.shape or not np.allclose(a, b), f"equal operands in {case.text}"
    if hasattr(exercise, "apply"):   # case 1, where a wrong backward shows first: its right gradients are not ~0
        from minitorch.tools.exercises.grader import _value_and_grads
        first = next(iter(draw_cases(exercise, 1)))
        _, grads, _ = _value_and_grads(exercise, lambda t: exercise.reference(t, first.options), first, "engine")
        for g in grads:
            assert g is None or np.abs(g).max() > 0.01, (first.text, g)   # (rows of 2 gave LayerNorm 1e-4)


def test_a_constant_ratio_is_named_only_where_the_right_gradient_is_not_tiny():
    """The student's LayerNorm on rows of 2: the right gradient is ~1e-4 everywhere, and a wrong answer whose rows
    sum to 0 is proportional to it: no 'constant ratio' there; a true scale still is one, tiny entries included."""
    from minitorch.tools.exercises.diagnose import constant_ratio
    want = np.array([[1e-4, -1e-4], [-2e-4, 2e-4]])
    assert constant_ratio(np.array([[0.66, -0.66], [-1.3, 1.3]]), want) is None
    right = np.array([[0.5, -0.25, 1e-7], [2.0, 1.0, -3.0]])
    assert constant_ratio(3 * right, right) == pytest.approx(3)
    assert constant_ratio(3 * right + np.array([[0, 0, 1e-3], [0, 0, 0]]), right) is None
    assert constant_ratio(np.array([6.0]), np.array([2.0])) is None   # one entry: any answer is a "ratio"


def test_the_tiny_engine_reads_as_a_documented_engine_and_its_example_runs():
    """harness.py's docstring builds a graph, walks it with the reference walk and shows the gradient: it runs as
    shown (doctest), and the gradient is the engine's."""
    import doctest
    from minitorch.tools.exercises import harness
    result = doctest.testmod(harness, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted >= 6 and result.failed == 0
    x = Tensor._make(np.array([0.5, -1.0]), requires_grad=True)
    (x * x + x).tanh().sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.19317162, -1.0], rtol=1e-8)


def test_a_gradient_summed_over_its_rows_is_shown_as_plain_numbers():
    """The report of a disagreement: a case small enough to redo by hand, every number plain."""
    text = _failure("mean", with_mistake("mean", "no 1/count"))
    line = next(ln for ln in text.splitlines() if ln.startswith("  dL/da, your backward:"))
    numbers = [float(v) for v in re.findall(r"-?\d+\.\d*(?:e[-+]\d+)?", line)]
    assert numbers and all(np.isfinite(numbers))


def test_strict_shapes_refuses_a_gradient_not_shaped_like_its_input():
    """In strict mode the walk does not undo broadcasting: it names the op, the input and both shapes; outside the
    block (the default) it sums the gradient back as always."""
    a = Tensor._make(np.ones((2, 3)), requires_grad=True)
    b = Tensor._make(np.arange(3.0), requires_grad=True)
    assert state.op_hook is None
    with strict_shapes():
        with pytest.raises(RuntimeError, match=r"strict shapes: Mul\.backward returned a gradient of shape \(2, 3\) "
                                               r"for input 1 of shape \(3,\): sum it over the broadcast axes"):
            (a * b).sum().backward()
    assert state.op_hook is None
    (a * b).sum().backward()
    np.testing.assert_array_equal(b.grad.numpy(), [2.0, 2.0, 2.0])

    class Wrong(Function):  # a gradient no broadcasting can explain
        def forward(self, x):
            return x * 2

        def backward(self, g):
            return g[:1]

    with strict_shapes(), pytest.raises(RuntimeError, match=r"Wrong\.backward .* shape \(1, 3\) for input 0 of "
                                                            r"shape \(2, 3\): it must have the input's shape"):
        Wrong.apply(a).sum().backward()


def test_a_saved_array_that_backward_never_reads_gets_a_note():
    class Mul(Function):
        def forward(self, a, b):
            out = a * b
            self.save_for_backward(a, b, out)   # out is never read
            return out

        def backward(self, g):
            a, b, _ = self.saved_tensors
            return _summed_to(g * b, a.shape), _summed_to(g * a, b.shape)

    notes = []
    assert check("mul", Mul, notes=notes) == EXAMPLES
    assert len(notes) == 1 and re.match(r"Mul: saved value 2 \(float64 .*backward never reads it", notes[0]), notes


def test_strict_shapes_is_per_thread():
    import threading
    seen = []
    with strict_shapes():
        worker = threading.Thread(target=lambda: seen.append(state.op_hook is not None))
        worker.start()
        worker.join()
        seen.append(state.op_hook is not None)
    assert seen == [False, True]


def test_a_backward_that_returns_too_few_gradients_is_told_how_many_to_return():
    """The engine refuses a backward whose count of gradients is not the count of apply's inputs; the grade says how
    many it got, for how many inputs, and on which case."""
    with pytest.raises(ExerciseFailed, match=r"backward returned 3 gradients for the 5 inputs of apply on q \(") as e:
        check("attention", with_mistake("attention", "no None for the mask and the words"))
    assert "with None for an input that gets none" in str(e.value)


def test_an_array_kept_as_an_attribute_instead_of_saved_is_named():
    class Mul(Function):  # the old style: what backward reads stored on self
        def forward(self, a, b):
            self.a, self.b = a, b
            return a * b

        def backward(self, g):
            return g * self.b, g * self.a

    with pytest.raises(ExerciseFailed, match=r"Mul: forward keeps an array as self\.a \(float64 .*save_for_backward"):
        check("mul", Mul)


@pytest.mark.parametrize("name", NAMES)
def test_each_stub_is_unfinished_states_its_exercise_and_names_the_engines_class(name, capsys):
    exercise = next(e for e in EXERCISES if e.name == name)
    source = (STUBS / f"{name}.py").read_text()
    assert source.startswith(f'"""Exercise {NAMES.index(name) + 1} ({name}): ')
    engine_part = name in ENGINE_MISTAKES
    if engine_part:
        assert f"def {exercise.cls}(" in source and source.count("raise NotImplementedError") == 1
    else:
        assert f"class {exercise.cls}(Function):" in source and source.count("raise NotImplementedError") == 2
    shown = [shlex.split(c) for c in re.findall(r"python3 -m minitorch\.tools\.exercises (.+)", source)]
    assert sorted(argv[:2] for argv in shown) == [["check", name], ["hint", name]], shown   # this exercise's
    assert "--dir" in next(argv for argv in shown if argv[0] == "check")   # the stub's folder, not the default
    assert main(next(argv for argv in shown if argv[0] == "hint")) == 0 and capsys.readouterr().out   # it runs
    assert "[i = j] - y_j" not in source and "G B^T" not in source   # the task, not the answer
    namespace = {}
    exec(compile(source, f"{name}.py", "exec"), namespace)
    with pytest.raises(ExerciseFailed, match=f"{exercise.cls} is not written yet" if engine_part else
                       "forward is not written yet"):
        check(name, namespace[exercise.cls])


def test_each_hint_points_to_a_heading_of_backprop_md():
    from test_docs import github_anchor
    text = (ROOT / "docs" / "backprop.md").read_text()
    anchors = {github_anchor(h) for h in re.findall(r"^#+ (.+)$", text, re.M)}
    for e in EXERCISES:
        assert e.anchor in anchors, (e.name, e.anchor)


def test_the_command_starts_grades_and_hints(tmp_path, capsys):
    folder = tmp_path / "mine"
    assert main(["start", str(folder)]) == 0
    assert sorted(p.name for p in folder.iterdir()) == sorted(f"{n}.py" for n in NAMES)
    assert main(["check", "softmax", "--dir", str(folder)]) == 1
    out = capsys.readouterr().out
    assert "FAIL softmax: Softmax: forward is not written yet" in out and "hint softmax" in out
    assert f"replay: it is case 1 of `python3 -m minitorch.tools.exercises check softmax --dir {folder}`" in out
    # the student's file: the independent solution above, written into the folder
    (folder / "softmax.py").write_text("import numpy as np\nfrom minitorch.autograd import Function\n\n\n"
                                       "def _shifted(x, dim):\n    m = x.max(axis=dim, keepdims=True)\n"
                                       "    return x - np.where(np.isneginf(m), 0, m)\n\n\n"
                                       "class Solution(Function):\n    mistake = None\n\n\n"
                                       + _source_of(Softmax))
    assert main(["start", str(folder)]) == 0 and "kept your softmax.py" in capsys.readouterr().out
    assert main(["check", "softmax", "--dir", str(folder)]) == 0
    out = capsys.readouterr().out
    assert f"ok   softmax: {EXAMPLES} drawn cases" in out and "note:" not in out
    (folder / "exp.py").write_text("import numpy as np\nfrom minitorch.autograd import Function\n\n\n"
                                   "class Exp(Function):\n    def forward(self, a):\n        out = np.exp(a)\n"
                                   "        self.save_for_backward(a, out)\n        return out\n\n"
                                   "    def backward(self, g):\n        a, out = self.saved_tensors\n"
                                   "        return g * out\n")
    assert main(["check", "exp", "--dir", str(folder)]) == 0
    assert re.search(r"note: Exp: saved value 0 \(float64 .*never reads it", capsys.readouterr().out)
    (folder / "mul.py").write_text("class Mul(:\n")
    assert main(["check", "mul", "--dir", str(folder)]) == 1
    assert re.search(r"mul\.py, line 1 does not import: SyntaxError", capsys.readouterr().out)
    assert main(["hint", "layer_norm"]) == 0
    out = capsys.readouterr().out
    assert "step 1 of 3 (what to derive first)" in out and "step 2 of" not in out and "hint layer_norm --step 2" in out
    assert "Once the check passes, read the derivation: docs/backprop.md#" in out
    assert main(["hint", "layer_norm", "--step", "3"]) == 0
    out = capsys.readouterr().out
    assert "step 2 of 3 (a nudge)" in out and "step 3 of 3 (the answer)" in out and "--step" not in out
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert " 1. topo_sort" in out and "17. lstm_cell" in out
    assert main(["check", "exp", "--dir", str(tmp_path / "nowhere")]) == 1
    assert "does not exist: copy the stubs there first" in capsys.readouterr().out


def _source_of(cls):
    import inspect
    return inspect.getsource(cls)


def test_check_all_on_the_engines_solutions_from_the_shell():
    done = subprocess.run([sys.executable, "-m", "minitorch.tools.exercises", "check", "all", "--solution"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().splitlines()[-1] == f"{len(NAMES)} of {len(NAMES)} exercises pass"
    bad = subprocess.run([sys.executable, "-m", "minitorch.tools.exercises", "check", "softmaxx"], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "softmaxx" in bad.stderr


def test_grading_needs_no_hypothesis(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "hypothesis", None)  # import hypothesis -> ImportError: the base install
    assert main(["check", "exp", "--solution", "--examples", "3"]) == 0
    assert "ok   exp: 3 drawn cases agree" in capsys.readouterr().out


def test_the_drawn_cases_are_the_same_on_every_run_and_differ_between_cases():
    from minitorch.tools.exercises.catalog import BY_NAME
    from minitorch.tools.exercises.drawing import draw_cases
    first, again = list(draw_cases(BY_NAME["mul"], 5)), list(draw_cases(BY_NAME["mul"], 5))
    assert [c.text for c in first] == [c.text for c in again]
    assert all(np.array_equal(a, b) for x, y in zip(first, again) for a, b in zip(x.arrays, y.arrays))
    assert len({c.text for c in first}) > 1


def test_drawn_broadcast_shapes_broadcast_to_the_base_shape():
    from minitorch.tools.exercises.drawing import hnp
    rng = np.random.default_rng(0)
    for _ in range(200):
        base = hnp.array_shapes(min_dims=1, max_dims=3, min_side=2, max_side=3)(rng)
        drawn = hnp.mutually_broadcastable_shapes(num_shapes=2, base_shape=base, min_dims=1, max_dims=3)(rng)
        assert all(1 <= len(s) <= 3 for s in drawn.input_shapes)
        assert np.broadcast_shapes(base, *drawn.input_shapes) == drawn.result_shape
