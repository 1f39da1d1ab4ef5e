"""The exercises' sandbox (minitorch/tools/exercises/sandbox.py, promises.py, blame.py): a wrong answer that would
break in the engine fails whatever its numbers (a write into g, into a saved array or into an input; an overflow
where the stub promises stability; a 0-d input; float64 out of float32 in), each with a named message; a student's
exception names their file, line and source line, with NumPy's error read; the stubs say what the check tests; a
failing no_grad case is shrunk. The wrong answers are the independent solutions of test_exercises.py with one
mistake each, written as a student writes them."""
import inspect
import re

import numpy as np
import pytest

from minitorch.autograd import Function
from minitorch.fused.lstm_cell import LSTMCellFunction as EngineLSTMCell
from minitorch.tools.exercises import ExerciseFailed, check
from minitorch.tools.exercises.__main__ import STUBS, main
from minitorch.tools.exercises.catalog import BY_NAME
from minitorch.tools.exercises.drawing import draw_cases
from minitorch.tools.exercises.promises import PROMISES, promised_cases
from test_exercises import (ENGINE_MISTAKES, SOLUTIONS, Conv2d, CrossEntropy, Div, Exp, LayerNorm, LogSoftmax,
                            LSTMCellFunction, MatMul, Mul, ScaledDotProductAttention, Softmax, _shifted, _summed_to,
                            with_mistake)

HERE = "test_exercise_sandbox.py"


def _failure(name, function, **options):
    with pytest.raises(ExerciseFailed) as failure:
        check(name, function, **options)
    return str(failure.value)


# ----- writes into what an op is given -----

class DivIntoG(Div):
    def backward(self, g):
        a, b = self.saved_tensors
        g /= b
        return _summed_to(g, a.shape), _summed_to(-g * a / b, b.shape)


class MulIntoG(Mul):
    def backward(self, g):
        a, b = self.saved_tensors
        g *= b
        return _summed_to(g, a.shape), _summed_to(g / b * a, b.shape)


class SoftmaxIntoG(Softmax):
    def backward(self, g):
        y, = self.saved_tensors
        g -= (g * y).sum(axis=self.dim, keepdims=True)
        return y * g


class LSTMIntoGc(LSTMCellFunction):
    def backward(self, gh, gc):
        i, f, g, o, c_prev, tanh_c = self.saved_tensors
        gc += gh * o * (1 - tanh_c ** 2)   # dc, accumulated into the incoming gc
        d_gates = np.concatenate([gc * g * i * (1 - i), gc * c_prev * f * (1 - f), gc * i * (1 - g ** 2),
                                  gh * tanh_c * o * (1 - o)], axis=-1)
        return d_gates, gc * f


class ExpIntoInput(Exp):
    def forward(self, a):
        out = np.exp(a, out=a)
        self.save_for_backward(out)
        return out


class SoftmaxShiftsItsInput(Softmax):
    def forward(self, x, dim):
        x -= x.max(axis=dim, keepdims=True)
        e = np.exp(x)
        y = e / e.sum(axis=dim, keepdims=True)
        self.save_for_backward(y)
        self.dim = dim
        return y


class ExpPastTheFlags(Exp):
    """Writes into its input after making it writable: the comparison after forward catches what the flags did not."""

    def forward(self, a):
        a.setflags(write=True)
        a *= 1.0 + 1e-3
        return super().forward(a)


class LogSoftmaxIntoSaved(LogSoftmax):
    def backward(self, g):
        y, = self.saved_tensors
        p = np.exp(y, out=y)   # the softmax, made in the saved array
        return g - p * g.sum(axis=self.dim, keepdims=True)


class LayerNormIntoSaved(LayerNorm):
    def backward(self, g):
        xhat, rstd, w = self.saved_tensors
        g = g.reshape(xhat.shape)
        gh = g if w is None else g * w.reshape(-1)
        dx = gh - gh.mean(axis=1, keepdims=True)
        xhat *= (gh * xhat).mean(axis=1, keepdims=True)
        dx = (dx - xhat) * rstd
        dw = None if w is None else (g * xhat).sum(axis=0).reshape(self.w_shape)
        db = g.sum(axis=0).reshape(self.w_shape) if self.has_b else None
        return dx.reshape(self.shape), dw, db


WRITES = [
    ("div", DivIntoG, r"DivIntoG: your backward writes into g \(the incoming gradient", r"g /= b"),
    ("mul", MulIntoG, r"MulIntoG: your backward writes into g \(the incoming gradient", r"g \*= b"),
    ("softmax", SoftmaxIntoG, r"your backward writes into g \(the incoming gradient", r"g -= \(g \* y\)"),
    ("lstm_cell", LSTMIntoGc, r"your backward writes into gc \(the incoming gradient", r"gc \+= gh"),
    ("exp", ExpIntoInput, r"ExpIntoInput: your forward changes its input a: .*read-only here",
     r"np\.exp\(a, out=a\)"),
    ("softmax", SoftmaxShiftsItsInput, r"your forward changes its input x: ", r"x -= x\.max"),
    ("log_softmax", LogSoftmaxIntoSaved, r"your backward writes into self\.saved_tensors\[0\]: what forward saved is "
                                         r"read again", r"np\.exp\(y, out=y\)"),
    ("layer_norm", LayerNormIntoSaved, r"your backward writes into self\.saved_tensors\[0\]", r"xhat \*= "),
]


@pytest.mark.parametrize("name, function, named, line", WRITES, ids=[w[1].__name__ for w in WRITES])
def test_a_write_into_what_the_op_is_given_fails_named_at_the_students_line(name, function, named, line):
    """The sandbox's message is the diagnosis: no mutation of the derivation (whose numbers a write into g may
    happen to give) is named beside it (explain.py)."""
    with pytest.raises(ExerciseFailed) as failure:
        check(name, function)
    text = str(failure.value)
    assert re.search(named, text, re.S), text
    assert failure.value.mutations == () and "\n  diagnosis: " not in text, text
    assert re.search(rf"at .*{HERE}, line \d+, in (forward|backward): .*{line}", text), text
    assert re.search(r"replay: it is case 1 of", text), text   # the first case shows it: no luck needed


def test_a_write_past_the_flags_is_caught_by_the_comparison_after_forward():
    text = _failure("exp", ExpPastTheFlags)
    assert "ExpPastTheFlags: your forward changes its input a: forward's inputs belong to the caller" in text, text


# ----- what each stub promises or forbids, drawn on every check, even with --examples 1 -----

class DivSquared(Div):
    def backward(self, g):
        a, b = self.saved_tensors
        return _summed_to(g / b, a.shape), _summed_to(-g * a / b ** 2, b.shape)


class LogSoftmaxUnshiftedEverywhere(LogSoftmax):
    def forward(self, x, dim):
        y = x - np.log(np.exp(x).sum(axis=dim, keepdims=True))
        self.save_for_backward(y)
        self.dim = dim
        return y


class AttentionUnshifted(ScaledDotProductAttention):
    """The max shift left out: nan at scores near 1000."""

    def forward(self, q, k, v, mask, words, dropout_p):
        self.scale = 1 / float(np.sqrt(q.shape[-1]))
        s = q @ k.swapaxes(-1, -2) * self.scale
        e = np.exp(s) if mask is None else np.where(mask, np.exp(s), 0.0)
        total = e.sum(axis=-1, keepdims=True)
        w = e / np.where(total == 0, 1, total)
        keep = keep_words(words, dropout_p)
        self.save_for_backward(q, k, v, w, keep)
        self.dropout_scale = 1 / (1 - dropout_p)
        return (w if keep is None else w * keep * self.dropout_scale) @ v


class AttentionNanOnMaskedRows(ScaledDotProductAttention):
    """Shifted by the row max, but a row with no True gives exp(-inf - (-inf)) = nan."""

    def forward(self, q, k, v, mask, words, dropout_p):
        self.scale = 1 / float(np.sqrt(q.shape[-1]))
        s = q @ k.swapaxes(-1, -2) * self.scale
        if mask is not None:
            s = np.where(mask, s, -np.inf)
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        w = e / e.sum(axis=-1, keepdims=True)
        keep = keep_words(words, dropout_p)
        self.save_for_backward(q, k, v, w, keep)
        self.dropout_scale = 1 / (1 - dropout_p)
        return (w if keep is None else w * keep * self.dropout_scale) @ v


def keep_words(words, p):
    from minitorch.ops.dropout import keep_mask
    return keep_mask(words, p) if p else None


class CrossEntropyUnshifted(CrossEntropy):
    def forward(self, x, target, ignore_index, label_smoothing, reduction):
        n, c = x.shape
        valid = target != ignore_index
        q = (1 - label_smoothing) * np.eye(c, dtype=x.dtype)[np.where(valid, target, 0)] + label_smoothing / c
        p = np.exp(x) / np.exp(x).sum(axis=1, keepdims=True)
        self.reduction, self.n_valid = reduction, max(int(valid.sum()), 1)
        self.save_for_backward(p, q, valid)
        loss = -(q * np.log(p)).sum(axis=1) * valid
        return {"none": loss, "sum": np.asarray(loss.sum()), "mean": np.asarray(loss.sum() / self.n_valid)}[reduction]


class ExpByElement(Exp):
    """A loop over the elements: no 0-d array can be looped over."""

    def forward(self, a):
        out = np.array([np.exp(x) for x in a])
        self.save_for_backward(out)
        return out


class Conv2dFloat64Buffer(Conv2d):
    def backward(self, g):
        dx, dw, db = super().backward(g)
        return dx.astype(np.float64), dw, db   # as np.zeros(shape) without a dtype makes it


class AttentionFloat64Scale(ScaledDotProductAttention):
    def forward(self, q, k, v, mask, words, dropout_p):
        out = super().forward(q, k, v, mask, words, dropout_p)
        self.scale = 1 / np.sqrt(q.shape[-1])   # an np.float64: float32 * np.float64 is float64 (NumPy 2)
        return out * np.float64(1.0)


class CrossEntropyFloat64Targets(CrossEntropy):
    def backward(self, g):
        dx, none = super().backward(g)
        return dx.astype(np.float64), none   # as q = np.eye(c)[t] makes it


PROMISED = [
    ("softmax", with_mistake("softmax", "no max shift"), r"forward differs from the engine's op on x .*values near "
                                                         r"1000.*subtract the max"),
    ("div", DivSquared, r"DivSquared: the gradient of input 1 differs from the engine's op on a .*both near 1e200"
                        r".*diagnosis: b\*\*2 \(or b \* b\) is inf at b = 1e200"),
    ("log_softmax", LogSoftmaxUnshiftedEverywhere, r"forward differs from the engine's op on x .*values near 1000, "
                                                   r"as the stub promises.*diagnosis: exp\(1000\) is inf: subtract"),
    ("attention", AttentionUnshifted, r"forward differs from the engine's op on q .*scores near 1000.*exp\(1000\) is "
                                      r"inf"),
    ("attention", AttentionNanOnMaskedRows, r"forward differs from the engine's op on q .*mask \[\[1, 0, 1\], \[0, 0, "
                                            r"0\]\]: a query with nothing to attend to.*diagnosis: a row of the mask "
                                            r"with no True"),
    ("cross_entropy", CrossEntropyUnshifted, r"forward differs from the engine's op on x .*values near 1000.*"
                                             r"subtract the max"),
    ("exp", ExpByElement, r"forward failed on a \(\) \(a 0-d array, which the stub promises\): TypeError: iteration "
                          r"over a 0-d array.*line \d+, in forward: out = np\.array\(\[np\.exp\(x\) for x in a\]\)"
                          r".*diagnosis: a 0-d array \(shape \(\)\) has no axis"),
    ("conv2d", Conv2dFloat64Buffer, r"your backward returns dL/dx in float64 for an input x in float32.*in float32 "
                                    r"\(training's dtype"),
    ("attention", AttentionFloat64Scale, r"your forward returns float64 for float32 inputs"),
    ("cross_entropy", CrossEntropyFloat64Targets, r"your backward returns dL/dx in float64 for an input x in float32"),
]


@pytest.mark.parametrize("name, function, named", PROMISED, ids=[p[1].__name__ for p in PROMISED])
def test_what_the_stub_promises_is_checked_on_every_run(name, function, named):
    text = _failure(name, function, max_examples=1)   # past case 1, whatever the drawn cases
    assert re.search(named, text, re.S), text
    assert "replay: a case the stub promises, checked after the drawn cases" in text, text


def test_each_promise_of_a_stub_is_drawn():
    """The phrases of the stubs' promises, and the case that draws each."""
    drawn = {
        "0-d included": lambda c: c.arrays[0].ndim == 0,
        "1e200": lambda c: c.arrays[1].dtype == np.float64 and min(np.abs(c.arrays[1]).min(),
                                                                   np.abs(c.arrays[0]).max()) > 1e199,
        "near 1000": lambda c: np.abs(c.arrays[0]).min() > 900 or "scores near 1000" in c.text,
        "masked query row": lambda c: c.options.get("mask") is not None and not c.options["mask"].any(axis=-1).all(),
        "float32": lambda c: c.arrays[0].dtype == np.float32,
    }
    seen = 0
    for name, exercise in BY_NAME.items():
        if not hasattr(exercise, "apply"):
            continue
        source = (STUBS / f"{name}.py").read_text()
        cases = [case for case, _ in promised_cases(exercise, next(iter(draw_cases(exercise, 1))))]
        for phrase, draws in drawn.items():
            if phrase in source:
                seen += 1
                assert any(draws(c) for c in cases), (name, phrase, [c.text for c in cases])
    assert seen >= 14 + 6, seen   # float32 in every op stub, and the six promises of PROMISES
    assert set(PROMISES) <= set(BY_NAME)


def test_scores_near_1000_are_near_1000():
    exercise = BY_NAME["attention"]
    case = promised_cases(exercise, next(iter(draw_cases(exercise, 1))))[2][0]
    q, k, _ = case.arrays
    scores = q @ k.swapaxes(-1, -2) / np.sqrt(q.shape[-1])
    assert np.all(np.abs(scores - 1000) < 20), scores


# ----- a student's exception is the student's -----

class MatMulNoTranspose(MatMul):
    def backward(self, g):
        a, b = self.saved_tensors
        da = g @ b
        return _summed_to(da, a.shape), _summed_to(a.swapaxes(-1, -2) @ g, b.shape)


class SoftmaxNoKeepdims(Softmax):
    def backward(self, g):
        y, = self.saved_tensors
        return y * (g - (g * y).sum(axis=self.dim))


def _first_failure(name, function, drawn):
    """The failure on the first drawn case that `drawn` accepts (case 1 of matmul is square: no mismatch there)."""
    exercise = BY_NAME[name]
    case = next(c for c in draw_cases(exercise, 20) if drawn(c))
    with pytest.raises(ExerciseFailed) as failure:
        exercise.check_case(function, case)
    return str(failure.value)


def test_an_exception_names_the_students_line_and_reads_a_matmul_mismatch():
    text = _first_failure("matmul", MatMulNoTranspose, lambda c: c.arrays[1].shape[-1] != c.arrays[1].shape[-2])
    assert re.search(rf"backward failed on a .*: ValueError: matmul: .*core dimension.*\n  at .*{HERE}, line \d+, in "
                     rf"backward: da = g @ b\n    \(there: da \([\d, ]+\), g \([\d, ]+\), b \([\d, ]+\)\)|"
                     rf"{HERE}, line \d+, in backward: da = g @ b\n    \(there: g \([\d, ]+\), b \([\d, ]+\)\)",
                     text), text
    assert "diagnosis: the factors of a matrix product do not fit" in text and "A transpose is missing" in text, text
    assert ".T reverses every axis" not in text   # no .T on the line: no word about one


def test_an_exception_names_the_students_line_and_reads_a_lost_axis():
    def mismatched(case):   # the row sums' shape does not broadcast against x's
        x = case.arrays[0]
        try:
            np.broadcast_shapes(x.shape, x.sum(axis=case.options["dim"]).shape)
        except ValueError:
            return True
        return False
    text = _first_failure("softmax", SoftmaxNoKeepdims, mismatched)
    assert re.search(rf"ValueError: operands could not be broadcast.*\n  at .*{HERE}, line \d+, in backward: return "
                     rf"y \* \(g - \(g \* y\)\.sum\(axis=self\.dim\)\)", text), text
    assert "keep it with keepdims=True" in text, text


def test_an_exception_in_a_students_file_names_that_file(tmp_path, capsys):
    folder = tmp_path / "mine"
    assert main(["start", str(folder)]) == 0
    (folder / "exp.py").write_text("import numpy as np\nfrom minitorch.autograd import Function\n\n\n"
                                   "class Exp(Function):\n    def forward(self, a):\n        out = np.exp(a)\n"
                                   "        self.save_for_backward(out)\n        return out\n\n"
                                   "    def backward(self, g):\n        out, = self.saved_tensors\n"
                                   "        return g * outt\n")
    capsys.readouterr()
    assert main(["check", "exp", "--dir", str(folder)]) == 1
    out = capsys.readouterr().out
    assert "NameError: name 'outt' is not defined" in out, out
    assert f"at {folder / 'exp.py'}, line 13, in backward: return g * outt\n    (there: g (3,))" in out, out


def test_an_error_on_import_names_the_line_and_its_source(tmp_path, capsys):
    folder = tmp_path / "mine"
    assert main(["start", str(folder)]) == 0
    (folder / "mul.py").write_text("import numpy as np\n\nSCALE = np.ones(3) @ np.ones(4)\n")
    capsys.readouterr()
    assert main(["check", "mul", "--dir", str(folder)]) == 1
    out = capsys.readouterr().out
    assert "does not import: ValueError: matmul: " in out, out
    assert f"at {folder / 'mul.py'}, line 3, in <module>: SCALE = np.ones(3) @ np.ones(4)" in out, out
    (folder / "mul.py").write_text("class Mul(:\n")
    assert main(["check", "mul", "--dir", str(folder)]) == 1
    out = capsys.readouterr().out
    assert "line 1 does not import: SyntaxError: invalid syntax (mul.py, line 1): class Mul(:" in out, out


def test_an_engine_exercise_exception_names_the_students_line():
    def no_grad_that_raises():
        raise KeyError("state")
    text = _failure("no_grad", no_grad_that_raises)
    assert re.search(rf"no_grad failed on .*KeyError: 'state'\n  at .*{HERE}, line \d+, in no_grad_that_raises: "
                     r"raise KeyError", text), text



def test_a_walk_that_asks_an_array_for_its_truth_names_the_line_and_reads_it():
    """`parent.grad or 0` asks an array for one True or False: the walk's failure names the student's line and reads
    NumPy's error (a missing value is tested with `is None`)."""
    def backward(order):
        for node in order:
            if node.grad is not None and node.backward_fn is not None:
                for parent, g in zip(node.parents, node.backward_fn(node.grad)):
                    parent.grad = (parent.grad or 0) + g
    text = _failure("backward", backward)
    assert re.search(rf"backward failed on .*ValueError: The truth value of an array .*\n  at .*{HERE}, line \d+, in "
                     r"backward: parent\.grad = \(parent\.grad or 0\) \+ g", text), text
    assert re.search(r"diagnosis: .*`x is None`", text), text


# ----- the stubs say what the check tests -----

OPS = [name for name, e in BY_NAME.items() if hasattr(e, "apply")]


@pytest.mark.parametrize("name", OPS)
def test_each_op_stub_says_what_the_check_tests(name):
    source = " ".join((STUBS / f"{name}.py").read_text().split())
    named = set(re.findall(r"\bself\.(\w+)", source.split('"""')[1]))   # what the docstring tells one to call
    assert {"save_for_backward", "saved_tensors"} <= named and all(hasattr(Function, n) for n in named), named
    assert "read-only" in source and "must not change" in source and "float32" in source


def test_the_lstm_stub_tells_gh_and_gc_apart():
    stub = (STUBS / "lstm_cell.py").read_text()
    namespace = {}
    exec(compile(stub, "lstm_cell.py", "exec"), namespace)
    gradients = list(inspect.signature(namespace["LSTMCellFunction"].backward).parameters)[1:]
    assert gradients == list(inspect.signature(EngineLSTMCell.backward).parameters)[1:]   # the engine's names
    for gradient, output in zip(gradients, ("h", "c")):   # each name said to be the gradient of its output
        assert re.search(rf"\b{gradient} = dL/d{output}\b", " ".join(stub.split())), gradient


def test_a_failing_no_grad_case_is_shrunk_to_a_small_nesting():
    for function, _ in ENGINE_MISTAKES["no_grad"].values():
        text = _failure("no_grad", function)
        blocks = re.search(r"on the blocks (\[.*?\])( \(|\n)", text).group(1)
        assert blocks.count("no_grad") + blocks.count("op") <= 3, text   # from nestings of up to 15 ops


def test_the_engines_softmax_keeps_float32_and_a_right_answer_in_float32_passes():
    """The promise cases hold the engine's own ops too (check(name) grades them), and a right answer that keeps
    float32 passes them."""
    for name in OPS:
        assert check(name, max_examples=1) == 1
        assert check(name, SOLUTIONS[name], max_examples=1) == 1


def test_a_shifted_softmax_is_the_stubs_answer():
    """(The helper the wrong answers above build on, checked once.)"""
    x = np.array([[1000.0, 1001.0, -np.inf]])
    assert np.isfinite(_shifted(x, 1)[:, :2]).all()
