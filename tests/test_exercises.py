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
from minitorch.exercises import EXAMPLES, EXERCISES, ExerciseFailed, check
from minitorch.exercises.__main__ import STUBS, main
from minitorch.ops import normalize_dims
from minitorch.ops.elementwise import keep_mask

ROOT = Path(__file__).resolve().parents[1]
NAMES = [e.name for e in EXERCISES]


# ----- a student's solutions, written from the stubs' statements (not from the engine's code); `mistake` selects
# one of the wrong backward passes that the checks must reject -----

class Solution(Function):
    mistake = None


class Mul(Solution):
    def forward(self, a, b):
        self.a, self.b = a, b
        return a * b

    def backward(self, g):
        if self.mistake == "swapped":
            return g * self.a, g * self.b
        return g * self.b, g * self.a


class Div(Solution):
    def forward(self, a, b):
        self.a, self.b = a, b
        return a / b

    def backward(self, g):
        sign = 1 if self.mistake == "sign" else -1
        return g / self.b, sign * (g / self.b) * (self.a / self.b)


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
        self.a, self.b = a, b
        return a @ b

    def backward(self, g):
        db = g.swapaxes(-1, -2) @ self.a if self.mistake == "transposed db" else self.a.swapaxes(-1, -2) @ g
        return g @ self.b.swapaxes(-1, -2), db


class Exp(Solution):
    def forward(self, a):
        self.out = np.exp(a)
        return self.out

    def backward(self, g):
        return g if self.mistake == "dropped factor" else g * self.out


class Log(Solution):
    def forward(self, a):
        self.a = a
        return np.log(a)

    def backward(self, g):
        return -g / self.a if self.mistake == "sign" else g / self.a


def _shifted(x, dim):
    m = x.max(axis=dim, keepdims=True)
    return x - np.where(np.isneginf(m), 0, m)


class Softmax(Solution):
    def forward(self, x, dim):
        e = np.exp(x if self.mistake == "no max shift" else _shifted(x, dim))
        self.y, self.dim = e / e.sum(axis=dim, keepdims=True), dim
        return self.y

    def backward(self, g):
        if self.mistake == "dropped term":
            return self.y * g
        return self.y * (g - (g * self.y).sum(axis=self.dim, keepdims=True))


class LogSoftmax(Solution):
    def forward(self, x, dim):
        z = _shifted(x, dim)
        self.y, self.dim = z - np.log(np.exp(z).sum(axis=dim, keepdims=True)), dim
        return self.y

    def backward(self, g):
        total = g if self.mistake == "no row sum" else g.sum(axis=self.dim, keepdims=True)
        return g - np.exp(self.y) * total


class CrossEntropy(Solution):
    def forward(self, x, target, ignore_index, label_smoothing, reduction):
        n, c = x.shape
        self.valid = target != ignore_index
        e = 0.0 if self.mistake == "smoothing dropped in backward" else label_smoothing
        q = (1 - label_smoothing) * np.eye(c)[np.where(self.valid, target, 0)] + label_smoothing / c
        z = _shifted(x, 1)
        log_p = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
        self.p, self.reduction, self.n_valid = np.exp(log_p), reduction, max(int(self.valid.sum()), 1)
        self.q = (1 - e) * np.eye(c)[np.where(self.valid, target, 0)] + e / c
        loss = -(q * log_p).sum(axis=1) * self.valid
        return {"none": loss, "sum": np.asarray(loss.sum()), "mean": np.asarray(loss.sum() / self.n_valid)}[reduction]

    def backward(self, g):
        s = g * self.valid
        if self.reduction == "mean" and self.mistake != "mean not divided":
            s = s / self.n_valid
        return (self.p - self.q) * s[:, None], None


class LayerNorm(Solution):
    def forward(self, x, weight, bias, normalized_ndim, eps):
        self.shape, self.w_shape = x.shape, x.shape[x.ndim - normalized_ndim:]
        n = int(np.prod(self.w_shape))
        rows = x.reshape(-1, n)
        centered = rows - rows.mean(axis=1, keepdims=True)
        self.rstd = 1 / np.sqrt((centered ** 2).mean(axis=1, keepdims=True) + eps)
        self.xhat, self.w, self.has_b = centered * self.rstd, weight, bias is not None
        y = self.xhat if weight is None else self.xhat * weight.reshape(n)
        return (y if bias is None else y + bias.reshape(n)).reshape(x.shape)

    def backward(self, g):
        g = g.reshape(self.xhat.shape)
        gh = g if self.w is None else g * self.w.reshape(-1)
        dx = gh - gh.mean(axis=1, keepdims=True)
        if self.mistake != "dropped xhat term":
            dx = dx - self.xhat * (gh * self.xhat).mean(axis=1, keepdims=True)
        dw = None if self.w is None else (g * self.xhat).sum(axis=0).reshape(self.w_shape)
        db = g.sum(axis=0).reshape(self.w_shape) if self.has_b else None
        return (dx * self.rstd).reshape(self.shape), dw, db


class ScaledDotProductAttention(Solution):
    def forward(self, q, k, v, mask, dropout_p):
        self.q, self.k, self.v, self.scale = q, k, v, 1 / np.sqrt(q.shape[-1])
        s = q @ k.swapaxes(-1, -2) * self.scale
        if mask is not None:
            s = np.where(mask, s, -np.inf)
        e = np.exp(_shifted(s, -1))
        total = e.sum(axis=-1, keepdims=True)
        self.w = e / np.where(total == 0, 1, total)
        self.keep = keep_mask(self.w.shape, dropout_p, "cpu") / (1 - dropout_p) if dropout_p else 1.0
        return (self.w * self.keep) @ v

    def backward(self, g):
        a = self.w * self.keep
        dw = g @ self.v.swapaxes(-1, -2)
        if self.mistake != "dropout scale dropped in backward":
            dw = dw * self.keep
        ds = self.w * (dw - (dw * self.w).sum(axis=-1, keepdims=True))
        dk_sign = -1 if self.mistake == "sign of dk" else 1
        return ds @ self.k * self.scale, dk_sign * ds.swapaxes(-1, -2) @ self.q * self.scale, \
            a.swapaxes(-1, -2) @ g, None


def _sigmoid(a):
    return 1 / (1 + np.exp(-a))


class LSTMCellFunction(Solution):
    def forward(self, gates, c_prev):
        i, f, g, o = np.split(gates, 4, axis=-1)
        self.i, self.f, self.g, self.o = _sigmoid(i), _sigmoid(f), np.tanh(g), _sigmoid(o)
        self.c_prev = c_prev
        c = self.f * c_prev + self.i * self.g
        self.tanh_c = np.tanh(c)
        return np.concatenate([self.o * self.tanh_c, c], axis=-1)

    def backward(self, grad):
        gh, gc = np.split(grad, 2, axis=-1)
        i, f, g, o, tanh_c = self.i, self.f, self.g, self.o, self.tanh_c
        dc = gh * o * (1 - tanh_c ** 2) + (0 if self.mistake == "gc dropped" else gc)
        return np.concatenate([dc * g * i * (1 - i), dc * self.c_prev * f * (1 - f), dc * i * (1 - g ** 2),
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
    done = subprocess.run([sys.executable, "-m", "minitorch.exercises", "check", "all", "--solution"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().splitlines()[-1] == f"{len(NAMES)} of {len(NAMES)} exercises pass"
    bad = subprocess.run([sys.executable, "-m", "minitorch.exercises", "check", "softmaxx"], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "softmaxx" in bad.stderr


def test_without_hypothesis_the_command_says_what_to_install(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "hypothesis", None)  # import hypothesis -> ImportError
    assert main(["check", "exp", "--solution"]) == 1
    assert "pip install hypothesis" in capsys.readouterr().err
