"""The graded exercises (minitorch/exercises): every check passes on the engine's own Function and on a solution
written here independently of the engine, and rejects at least one wrong backward per exercise (a dropped term, a
wrong sign, a missing re-broadcast, ...); the stubs are unfinished and say so; the command works as documented."""
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from minitorch.autograd import Function
from minitorch.tools.exercises import EXAMPLES, EXERCISES, ExerciseFailed, check
from minitorch.tools.exercises.__main__ import STUBS, main
from minitorch.ops import normalize_dims
from minitorch.ops.dropout import keep_mask

ROOT = Path(__file__).resolve().parents[2]
NAMES = [e.name for e in EXERCISES]


# ----- a student's solutions, written from the stubs' statements (not from the engine's code); `mistake` selects
# one of the wrong backward passes that the checks must reject -----

class Solution(Function):
    mistake = None


class Mul(Solution):
    def forward(self, a, b):
        self.save_for_backward(a, b)
        return a * b

    def backward(self, g):
        a, b = self.saved_tensors
        if self.mistake == "swapped":
            return g * a, g * b
        return g * b, g * a


class Div(Solution):
    def forward(self, a, b):
        self.save_for_backward(a, b)
        return a / b

    def backward(self, g):
        a, b = self.saved_tensors
        sign = 1 if self.mistake == "sign" else -1
        return g / b, sign * (g / b) * (a / b)


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
        return g @ b.swapaxes(-1, -2), db


class Exp(Solution):
    def forward(self, a):
        out = np.exp(a)
        self.save_for_backward(out)
        return out

    def backward(self, g):
        out, = self.saved_tensors
        return g if self.mistake == "dropped factor" else g * out


class Log(Solution):
    def forward(self, a):
        self.save_for_backward(a)
        return np.log(a)

    def backward(self, g):
        a, = self.saved_tensors
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


class CrossEntropy(Solution):
    def forward(self, x, target, ignore_index, label_smoothing, reduction):
        n, c = x.shape
        valid = target != ignore_index
        e = 0.0 if self.mistake == "smoothing dropped in backward" else label_smoothing
        q = (1 - label_smoothing) * np.eye(c)[np.where(valid, target, 0)] + label_smoothing / c
        z = _shifted(x, 1)
        log_p = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
        self.reduction, self.n_valid = reduction, max(int(valid.sum()), 1)
        # the soft targets backward subtracts (without smoothing for the mistake)
        self.save_for_backward(np.exp(log_p), (1 - e) * np.eye(c)[np.where(valid, target, 0)] + e / c, valid)
        loss = -(q * log_p).sum(axis=1) * valid
        return {"none": loss, "sum": np.asarray(loss.sum()), "mean": np.asarray(loss.sum() / self.n_valid)}[reduction]

    def backward(self, g):
        p, q, valid = self.saved_tensors
        s = g * valid
        if self.reduction == "mean" and self.mistake != "mean not divided":
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
        dx = gh - gh.mean(axis=1, keepdims=True)
        if self.mistake != "dropped xhat term":
            dx = dx - xhat * (gh * xhat).mean(axis=1, keepdims=True)
        dw = None if w is None else (g * xhat).sum(axis=0).reshape(self.w_shape)
        db = g.sum(axis=0).reshape(self.w_shape) if self.has_b else None
        return (dx * rstd).reshape(self.shape), dw, db


class ScaledDotProductAttention(Solution):
    def forward(self, q, k, v, mask, words, dropout_p):
        self.scale = 1 / np.sqrt(q.shape[-1])
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
        grads = ds @ k * self.scale, dk_sign * ds.swapaxes(-1, -2) @ q * self.scale, a.swapaxes(-1, -2) @ g
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
        return np.concatenate([o * tanh_c, c], axis=-1)

    def backward(self, grad):
        i, f, g, o, c_prev, tanh_c = self.saved_tensors
        gh, gc = np.split(grad, 2, axis=-1)
        dc = gh * o * (1 - tanh_c ** 2) + (0 if self.mistake == "gc dropped" else gc)
        return np.concatenate([dc * g * i * (1 - i), dc * c_prev * f * (1 - f), dc * i * (1 - g ** 2),
                               gh * tanh_c * o * (1 - o)], axis=-1), dc * f


SOLUTIONS = {"mul": Mul, "div": Div, "sum": Sum, "mean": Mean, "matmul": MatMul, "exp": Exp, "log": Log,
             "softmax": Softmax, "log_softmax": LogSoftmax, "cross_entropy": CrossEntropy, "layer_norm": LayerNorm,
             "attention": ScaledDotProductAttention, "lstm_cell": LSTMCellFunction}
MISTAKES = {"mul": ["swapped"], "div": ["sign"], "sum": ["no re-broadcast", "summed dims not put back"],
            "mean": ["no 1/count", "summed dims not put back"], "matmul": ["transposed db"],
            "exp": ["dropped factor"], "log": ["sign"], "softmax": ["dropped term", "no max shift"],
            "log_softmax": ["no row sum"], "cross_entropy": ["smoothing dropped in backward", "mean not divided"],
            "layer_norm": ["dropped xhat term"], "attention": ["dropout scale dropped in backward", "sign of dk"],
            "lstm_cell": ["gc dropped"]}


def with_mistake(name, mistake):
    solution = SOLUTIONS[name]
    return type(solution.__name__, (solution,), {"mistake": mistake})


def test_the_sequence_covers_the_ops_of_the_issue_in_order():
    assert NAMES == ["mul", "div", "sum", "mean", "matmul", "exp", "log", "softmax", "log_softmax", "cross_entropy",
                     "layer_norm", "attention", "lstm_cell"]
    assert set(SOLUTIONS) == set(MISTAKES) == set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_the_engines_own_function_passes(name):
    assert check(name) == EXAMPLES


@pytest.mark.parametrize("name", NAMES)
def test_a_solution_written_independently_of_the_engine_passes(name):
    assert check(name, SOLUTIONS[name]) == EXAMPLES


@pytest.mark.parametrize("name, mistake", [(n, m) for n in NAMES for m in MISTAKES[n]])
def test_a_wrong_backward_is_rejected(name, mistake):
    with pytest.raises(ExerciseFailed, match=r"differs|disagrees|failed") as failure:
        check(name, with_mistake(name, mistake))
    assert re.search(r"on \w+ \(", str(failure.value)), f"the message names no drawn case: {failure.value}"


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
def test_each_stub_is_unfinished_states_its_exercise_and_names_the_engines_class(name):
    exercise = next(e for e in EXERCISES if e.name == name)
    source = (STUBS / f"{name}.py").read_text()
    assert source.startswith(f'"""Exercise {NAMES.index(name) + 1} ({name}): ')
    assert f"class {exercise.cls}(Function):" in source and source.count("raise NotImplementedError") == 2
    assert f"check {name} --dir" in source and f"hint {name}" in source
    namespace = {}
    exec(compile(source, f"{name}.py", "exec"), namespace)
    with pytest.raises(ExerciseFailed, match="forward is not written yet"):
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
    # the student's file: the independent solution above, written into the folder
    (folder / "softmax.py").write_text("import numpy as np\nfrom minitorch.autograd import Function\n\n\n"
                                       "def _shifted(x, dim):\n    m = x.max(axis=dim, keepdims=True)\n"
                                       "    return x - np.where(np.isneginf(m), 0, m)\n\n\n"
                                       "class Solution(Function):\n    mistake = None\n\n\n"
                                       + _source_of(Softmax))
    assert main(["start", str(folder)]) == 0 and "kept your softmax.py" in capsys.readouterr().out
    assert main(["check", "softmax", "--dir", str(folder)]) == 0
    assert f"ok   softmax: {EXAMPLES} drawn cases" in capsys.readouterr().out
    (folder / "mul.py").write_text("class Mul(:\n")
    assert main(["check", "mul", "--dir", str(folder)]) == 1
    assert re.search(r"mul\.py, line 1 does not import: SyntaxError", capsys.readouterr().out)
    assert main(["hint", "layer_norm"]) == 0 and "docs/backprop.md#" in capsys.readouterr().out
    assert main(["list"]) == 0 and "13. lstm_cell" in capsys.readouterr().out
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


def test_without_hypothesis_the_command_says_what_to_install(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "hypothesis", None)  # import hypothesis -> ImportError
    assert main(["check", "exp", "--solution"]) == 1
    assert "pip install hypothesis" in capsys.readouterr().err
