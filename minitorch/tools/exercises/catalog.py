"""The exercises in order, from the first primitive to the Transformer's fused ops.

For each: the name of the `Function` class it grades (the stub's and the engine's own), how the checker draws its
inputs, how it calls the class, and the engine's public op it must agree with. The statement a student reads is the
stub's docstring (stubs/NAME.py); the hint and the derivation to read afterwards are here.
"""
import importlib
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ... import backend, functional as F
from ...ops.dropout import random_words
from ...functions import cat
from ...ops.windows import window
from . import engine_checks, reference
from .case import ROW, Case

DOC = "docs/backprop.md"


@dataclass(frozen=True)
class Exercise:
    name: str
    cls: str                     # the Function's class name, in the stub and in the engine
    engine: str                  # "module:Class" of the engine's solution
    title: str
    anchor: str                  # the section of docs/backprop.md with the derivation
    hints: tuple                 # in steps: what to derive first, a nudge, the answer
    draw: Callable               # (draw, st, hnp) -> Case: draw, st and hnp are drawing.py's
    apply: Callable              # (cls, tensors, options) -> Tensor: the graded op called as the engine calls it
    reference: Callable          # (tensors, options) -> Tensor: the engine's public op
    inputs: tuple = ("a", "b")   # the names of the differentiable inputs, for a failure's report
    zero_sum: Callable = None    # case -> the axes along which the rows of dx sum to 0 (shift-invariant ops)
    # the scales of this case (a count, sqrt(d)), named first when a gradient is a constant ratio of the right one
    # and no mutation of the derivation (derivations/NAME.py) matches: case -> [(ratio, meaning)]
    scales: Callable = None
    # the outputs joined (last axis, equal parts) into what apply returns, named apart in a failure's report
    outputs: tuple = ("out",)

    def solution(self):
        """The engine's own Function class for this exercise."""
        module, name = self.engine.split(":")
        return getattr(importlib.import_module(module), name)

    def check_case(self, function, case, strict=True):
        from . import grader
        grader.check_case(self, function, case, strict)

    @property
    def doc(self):
        return f"{DOC}#{self.anchor}"


@dataclass(frozen=True)
class EngineExercise:
    """An exercise on the engine itself: the student writes one function (cls: its name) of the tiny engine
    (harness.py); `checker(function, case, strict)` compares it with the engine's own code on the drawn case."""
    name: str
    cls: str
    title: str
    anchor: str
    hints: tuple
    draw: Callable
    checker: Callable
    # case -> the cases one step smaller, where the case is a structure with nothing drawn to lower (shrink.py)
    smaller: Callable = None

    def solution(self):
        return getattr(reference, self.cls)

    def check_case(self, function, case, strict=True):
        self.checker(function, case, strict)

    @property
    def doc(self):
        return f"{DOC}#{self.anchor}"


def _values(draw, st, shape, low=None, high=None, scale=1.0):
    """A float64 array of `shape` from a NumPy generator seeded by the case's draw: normal(0, scale), or uniform in
    [low, high] when the bounds are given."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    if low is None:
        return rng.standard_normal(shape) * scale
    return rng.uniform(low, high, shape)


def _shapes(draw, hnp, min_dims=1, max_dims=3):
    return draw(hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=ROW, max_side=ROW + 1))


# ----- the primitives -----

def _broadcast_pair(draw, st, hnp, away_from_zero=False):
    out_shape = _shapes(draw, hnp)  # sides of 3 or 4, so that every broadcast dim (a 1, or a missing dim) is visible
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, base_shape=out_shape, min_dims=1,
                                                    max_dims=3)).input_shapes
    a = _values(draw, st, shapes[0])
    if away_from_zero:  # |b| in [0.5, 2]: a / b stays well conditioned for the finite differences
        b = _values(draw, st, shapes[1], 0.5, 2.0) * np.where(_values(draw, st, shapes[1]) < 0, -1.0, 1.0)
    else:
        b = _values(draw, st, shapes[1])
    return Case([a, b], {}, f"a {a.shape}, b {b.shape}")


def _reduction_case(draw, st, hnp):
    # partial reductions and keepdim=False weigh double: there the summed dims must be put back before broadcasting
    kind = draw(st.sampled_from(["one dim", "a tuple of dims", "every dim", "one dim", "a tuple of dims"]))
    # at least one dim summed and one kept; a tuple of two or more dims with one kept needs three
    shape = _shapes(draw, hnp, min_dims=3 if kind == "a tuple of dims" else 2)
    ndim = len(shape)
    if kind == "every dim":
        dim = None
    elif kind == "one dim":
        dim = draw(st.integers(-ndim, ndim - 1))
    else:  # negatives allowed, each axis once, two or more: each must be put back
        dim = tuple(draw(st.lists(st.integers(-ndim, ndim - 1), min_size=2, max_size=ndim - 1,
                                  unique_by=lambda d: d % ndim)))
    keepdim = draw(st.sampled_from([False, True, False]))
    return Case([_values(draw, st, shape)], {"dim": dim, "keepdim": keepdim},
                f"a {shape}, dim={dim!r}, keepdim={keepdim}")


def _matmul_case(draw, st, hnp):
    n, k, m = (draw(st.integers(ROW, ROW + 1)) for _ in range(3))
    batch_a, batch_b = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=2,
                                                              max_side=2)).input_shapes
    a, b = _values(draw, st, batch_a + (n, k)), _values(draw, st, batch_b + (k, m))
    return Case([a, b], {}, f"a {a.shape} @ b {b.shape}")


def _unary_case(positive=False):
    def draw_case(draw, st, hnp):
        shape = _shapes(draw, hnp)
        a = _values(draw, st, shape, 0.2, 3.0) if positive else _values(draw, st, shape, scale=2.0)
        return Case([a], {}, f"a {a.shape}")
    return draw_case


# ----- the fused ops -----

def _softmax_case(draw, st, hnp):
    shape = _shapes(draw, hnp)
    dim = draw(st.integers(0, len(shape) - 1))
    offset = draw(st.sampled_from([0.0, 1000.0]))  # exp(1000) overflows: only a shifted exponent stays finite
    x = _values(draw, st, shape, scale=2.0) + offset
    return Case([x], {"dim": dim}, f"x {shape} (values near {offset:g}), dim={dim}")


def _cross_entropy_case(draw, st, hnp):
    n, c = draw(st.integers(ROW, 5)), draw(st.integers(ROW, 5))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    target = rng.integers(0, c, n)
    target[rng.random(n) < draw(st.sampled_from([0.0, 0.4]))] = -100
    e = draw(st.sampled_from([0.0, 0.1, 0.4]))
    reduction = draw(st.sampled_from(["mean", "sum", "none"]))
    x = _values(draw, st, (n, c), scale=2.0)
    options = {"target": target, "ignore_index": -100, "label_smoothing": e, "reduction": reduction}
    return Case([x], options, f"x {x.shape}, target {target.tolist()}, label_smoothing={e}, reduction={reduction!r}")


def _cross_entropy_scales(case):
    """A 'mean' divides by the rows that are not ignored: that count is named before any generic factor."""
    target = case.options["target"]
    n, valid = len(target), int((target != case.options["ignore_index"]).sum())
    if case.options["reduction"] != "mean" or valid == 0:
        return []
    found = [(float(valid), f"a factor {valid} too large: a missing division by {valid}, the number of rows that are "
                            f"not ignored ('mean' averages over them)")]
    if valid < n:
        found.append((valid / n, f"{valid}/{n} of the right value: divided by all {n} rows where 'mean' divides by the "
                                 f"{valid} rows that are not ignored (target != ignore_index)"))
    return found


def _cross_entropy_apply(cls, t, o):
    return cls.apply(t[0], o["target"], ignore_index=o["ignore_index"], label_smoothing=o["label_smoothing"],
                     reduction=o["reduction"])


def _layer_norm_case(draw, st, hnp):
    normalized = tuple(draw(st.lists(st.integers(ROW, 4), min_size=1, max_size=2)))
    lead = tuple(draw(st.lists(st.integers(1, 3), min_size=0, max_size=2)))
    affine = draw(st.booleans())
    x = _values(draw, st, lead + normalized, scale=2.0)
    w, b = (_values(draw, st, normalized), _values(draw, st, normalized)) if affine else (None, None)
    return Case([x, w, b], {"normalized_ndim": len(normalized), "eps": 1e-5},
                f"x {x.shape} normalised over its last {len(normalized)} dims, {'with' if affine else 'no'} w and b")


def _layer_norm_reference(t, o):
    return F.layer_norm(t[0], t[0].shape[t[0].ndim - o["normalized_ndim"]:], t[1], t[2], eps=o["eps"])


def _attention_case(draw, st, hnp):
    tq, tk = draw(st.integers(1, 3)), draw(st.integers(ROW, 4))
    d, dv = draw(st.integers(ROW, 5)), draw(st.integers(ROW, 4))
    batch = tuple(draw(st.lists(st.integers(1, 2), max_size=1)))
    q, k, v = (_values(draw, st, batch + shape) for shape in ((tq, d), (tk, d), (tk, dv)))
    mask = None
    if draw(st.booleans()):
        mask = np.random.default_rng(draw(st.integers(0, 2**32 - 1))).random((tq, tk)) < 0.6
        if draw(st.booleans()):
            mask[-1] = False  # a query with nothing to attend to (a padding query)
    p = draw(st.sampled_from([0.0, 0.3]))
    options = {"mask": mask, "dropout_p": p, "seed": draw(st.integers(0, 1000))}
    masked = "no mask" if mask is None else f"mask {mask.astype(int).tolist()}"
    return Case([q, k, v], options, f"q {q.shape}, k {k.shape}, v {v.shape}, {masked}, dropout_p={p}")


def _attention_apply(cls, t, o):
    """The op called as scaled_dot_product_attention calls it: the dropout's random words are an input, drawn right
    after the seed, so that every call (and the engine's op) gets the same mask."""
    backend.manual_seed(o["seed"])
    q, k, v = t
    p = o["dropout_p"]
    scores = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2]) + (q.shape[-2], k.shape[-2])
    words = random_words(scores, "cpu") if p > 0 else None
    return cls.apply(q, k, v, o["mask"], words, dropout_p=p)


def _attention_scales(case):
    """The scales of this case: 1/sqrt(d) with its d, and the dropout's 1/(1 - p)."""
    d, p = case.arrays[0].shape[-1], case.options["dropout_p"]
    found = [(np.sqrt(d), f"sqrt({d}) = {np.sqrt(d):.3f} times too large: a missing 1/sqrt(d) with d = {d} "
                          f"(attention's scale)"),
             (1 / np.sqrt(d), f"1/sqrt({d}) = {1 / np.sqrt(d):.3f} of the right value: the scale 1/sqrt(d) (d = {d}) "
                              f"applied once too often")]
    if p:
        found += [(1 - p, "it is 1 - dropout_p: the dropout's scale 1/(1 - p) is missing"),
                  (1 / (1 - p), "it is 1/(1 - dropout_p): the dropout's scale is applied once too often")]
    return found


def _attention_reference(t, o):
    backend.manual_seed(o["seed"])
    return F.scaled_dot_product_attention(t[0], t[1], t[2], o["mask"], dropout_p=o["dropout_p"], training=True)


def _lstm_case(draw, st, hnp):
    n, h = draw(st.integers(1, 3)), draw(st.integers(ROW, 4))
    gates, c_prev = _values(draw, st, (n, 4 * h), scale=1.5), _values(draw, st, (n, h))
    return Case([gates, c_prev], {}, f"gates {gates.shape}, c_prev {c_prev.shape}")


def _softmax_rows(case):
    return case.options["dim"]


def _layer_norm_rows(case):
    return tuple(range(case.arrays[0].ndim - case.options["normalized_ndim"], case.arrays[0].ndim))


ENGINE = "the-backward-walk"   # the section of docs/backprop.md on the engine's own parts

ENGINE_EXERCISES = [
    EngineExercise("topo_sort", "topological_order", "the order of the backward walk", ENGINE, (
        "Derive first: when backward reaches a node, every gradient that node will ever receive must already have "
        "arrived. Which nodes send it gradients, and so which must come before it?",
        "A depth-first visit that appends a node only after visiting all its parents lists each node after what it "
        "was computed from; reversed, that is the order you need. x * x has x twice in .parents.",
        "visited = set of ids; visit(n): if seen, return; mark it; visit each parent; order.append(n). Return "
        "order reversed (root first)."),
        engine_checks.draw_graph, engine_checks.check_topological_order),
    EngineExercise("backward", "backward", "the backward walk, with gradients added up", ENGINE, (
        "Derive first: L depends on x through every node that uses x. By the chain rule, what is dL/dx when x is "
        "used twice (y = x * x, or two nodes reading x)?",
        "Walk the order root first; each node with a .grad calls backward_fn(node.grad) and hands one gradient to "
        "each parent. What must happen when a parent already has a .grad?",
        "for node in order: skip it if node.grad is None or backward_fn is None; for parent, g in zip(parents, "
        "backward_fn(node.grad)): parent.grad = g if parent.grad is None else parent.grad + g (a new array: "
        "never += into an array that another node may share)."),
        engine_checks.draw_graph, engine_checks.check_backward),
    EngineExercise("unbroadcast", "unbroadcast", "summing a gradient back over broadcast axes", ENGINE, (
        "Derive first: if b of shape (3, 1) is broadcast to (2, 3, 4) in a + b, how many output elements does each "
        "element of b reach, and what does each contribute to dL/db?",
        "Broadcasting adds leading axes and stretches axes of size 1. Each copy contributes its gradient: sum over "
        "those axes. Which sum needs keepdims, so that the size-1 axes stay?",
        "Sum over the first grad.ndim - len(shape) axes; then sum with keepdims=True over each axis i where "
        "shape[i] == 1 and grad.shape[i] != 1."),
        engine_checks.draw_unbroadcast, engine_checks.check_unbroadcast),
    EngineExercise("no_grad", "no_grad", "no_grad, the switch that stops recording", ENGINE, (
        "Derive first: what must hold after the block ends: normally, after an exception inside it, and when it "
        "ends inside another no_grad block?",
        "A generator decorated with @contextlib.contextmanager: the code before `yield` runs on entry, the code after "
        "it on exit. Which value must the exit put back, and how does it run even when the block raised?",
        "previous = state.grad_enabled; state.grad_enabled = False; try: yield; finally: state.grad_enabled = "
        "previous."),
        engine_checks.draw_blocks, engine_checks.check_no_grad, engine_checks.smaller_blocks),
]

OP_EXERCISES = [
    Exercise("mul", "Mul", "minitorch.ops:Mul", "a * b, with broadcasting", "mul-and-div-broadcasting", (
        "Derive first: d(ab) for a change da of a alone, then db of b alone.",
        "Each input's gradient is g times the other input, in the output's (broadcast) shape. The grader does not "
        "sum it back for you: what must happen to an input that was broadcast (your unbroadcast exercise)?",
        "da = unbroadcast(g * b, a.shape), db = unbroadcast(g * a, b.shape) (sum over the added axes, then over the "
        "stretched size-1 axes with keepdims=True)."),
        lambda draw, st, hnp: _broadcast_pair(draw, st, hnp), lambda cls, t, o: cls.apply(t[0], t[1]),
        lambda t, o: t[0] * t[1]),
    Exercise("div", "Div", "minitorch.ops:Div", "a / b, with broadcasting", "mul-and-div-broadcasting", (
        "Derive first: d(a / b) with respect to a, then with respect to b (the derivative of 1/b).",
        "The b term has a minus sign and b squared. Both gradients are summed back to their input's shape, as in "
        "mul.",
        "da = g / b, db = -(g / b) * (a / b) (b^2 overflows first), each summed back over broadcast axes."),
        lambda draw, st, hnp: _broadcast_pair(draw, st, hnp, away_from_zero=True),
        lambda cls, t, o: cls.apply(t[0], t[1]), lambda t, o: t[0] / t[1]),
    Exercise("sum", "Sum", "minitorch.ops:Sum", "sum over dims", "sum-and-mean", (
        "Derive first: how much does out change when one summed element of a changes by 1?",
        "Every summed element gets the output's gradient unchanged: g must be spread back to a's shape. With "
        "keepdim=False, which axes are missing from g?",
        "With keepdim=False put the summed dims back as size 1 (np.expand_dims(g, dims)), then "
        "np.broadcast_to(g, a.shape) (copy it if you will write into it)."),
        _reduction_case, lambda cls, t, o: cls.apply(t[0], **o),
        lambda t, o: t[0].sum(dim=o["dim"], keepdim=o["keepdim"]), inputs=("a",)),
    Exercise("mean", "Mean", "minitorch.ops:Mean", "mean over dims", "sum-and-mean", (
        "Derive first: the mean is a sum times a constant. Which constant?",
        "As sum, times 1/n, where n counts the elements averaged into each output.",
        "n = the product of the reduced dims' sizes; the gradient is sum's, divided by n."),
        _reduction_case, lambda cls, t, o: cls.apply(t[0], **o),
        lambda t, o: t[0].mean(dim=o["dim"], keepdim=o["keepdim"]), inputs=("a",)),
    Exercise("matmul", "MatMul", "minitorch.ops:MatMul", "a @ b, batched", "matmul", (
        "Derive first: for out_ij = sum_k a_ik b_kj, write dL/da_ik and dL/db_kj as sums over the other index.",
        "Check the shapes: dA must be (..., n, k), so G (..., n, m) is multiplied by something (m, k). A batch dim "
        "that was broadcast must be summed back (the grader does not do it for you).",
        "dA = G @ B^T, dB = A^T @ G, with swapaxes(-1, -2) as the transpose; each summed over broadcast batch dims "
        "to its input's shape."),
        _matmul_case, lambda cls, t, o: cls.apply(t[0], t[1]), lambda t, o: t[0] @ t[1]),
    Exercise("exp", "Exp", "minitorch.ops:Exp", "exp(a)", "exp-and-log", (
        "Derive first: the derivative of exp.",
        "It is the output itself: which array should forward save?",
        "Save the output; backward returns g * out (one gradient: apply has one input)."),
        _unary_case(), lambda cls, t, o: cls.apply(t[0]), lambda t, o: t[0].exp(), inputs=("a",)),
    Exercise("log", "Log", "minitorch.ops:Log", "log(a)", "exp-and-log", (
        "Derive first: the derivative of log.",
        "It needs the input: save it.",
        "backward returns g / a."),
        _unary_case(positive=True), lambda cls, t, o: cls.apply(t[0]), lambda t, o: t[0].log(), inputs=("a",)),
    Exercise("softmax", "Softmax", "minitorch.fused.softmax:Softmax", "softmax along one dim", "1-softmax-softmax", (
        "Derive first: d y_i / d x_j with the quotient rule, for i = j and for i != j. Write both cases with one "
        "formula using [i = j]. Why can you subtract a constant from x without changing y?",
        "The vector-Jacobian product dx_j = sum_i g_i d y_i / d x_j splits into the [i = j] term and a term with one "
        "sum along dim, taken with keepdims=True. Check: every row of dx sums to 0.",
        "Forward: subtract x.max(axis=dim, keepdims=True) before exp. Backward: dx = y * (g - (g * y).sum(axis=dim, "
        "keepdims=True))."),
        _softmax_case, lambda cls, t, o: cls.apply(t[0], **o), lambda t, o: F.softmax(t[0], **o),
        inputs=("x",), zero_sum=_softmax_rows),
    Exercise("log_softmax", "LogSoftmax", "minitorch.fused.softmax:LogSoftmax", "log-softmax along one dim",
             "2-log-softmax-logsoftmax", (
                 "Derive first: y_j = x_j - log sum_i exp(x_i). What is d y_i / d x_j?",
                 "It is [i = j] - p_j with p = softmax(x) = exp(y). Sum it against g_i: one term is g itself, the "
                 "other p_j times one row sum.",
                 "Forward: z = x - max(x) along dim, y = z - log(sum(exp(z))). Backward: dx = g - exp(y) * "
                 "g.sum(axis=dim, keepdims=True)."),
             _softmax_case, lambda cls, t, o: cls.apply(t[0], **o), lambda t, o: F.log_softmax(t[0], **o),
             inputs=("x",), zero_sum=_softmax_rows),
    Exercise("cross_entropy", "CrossEntropy", "minitorch.fused.cross_entropy:CrossEntropy",
             "cross-entropy with label smoothing, ignore_index and the three reductions",
             "3-cross-entropy-with-label-smoothing-crossentropy", (
                 "Derive first: for one row, loss = -sum_c q_c log p_c with soft targets q summing to 1. What is "
                 "d loss / d x_c (use the log-softmax exercise)?",
                 "It is p - q, per row. Then ask what reaches each row from the reduction: 'sum', 'mean' (over the "
                 "rows that are not ignored) and 'none'.",
                 "q = (1 - e) one_hot(t) + e / C (np.eye(C)[t]; any class on an ignored row). Row r's gradient p_r - "
                 "q_r times g for 'sum', g / n_valid for 'mean', g[r] for 'none', and 0 on an ignored row."),
             _cross_entropy_case, _cross_entropy_apply,
             lambda t, o: F.cross_entropy(t[0], o["target"], ignore_index=o["ignore_index"],
                                          label_smoothing=o["label_smoothing"], reduction=o["reduction"]),
             inputs=("x",), zero_sum=lambda case: 1, scales=_cross_entropy_scales),
    Exercise("layer_norm", "LayerNorm", "minitorch.fused.layer_norm:LayerNorm", "LayerNorm over the last dims",
             "4-layernorm-layernorm", (
                 "Derive first: on one row of n values, xhat = (x - mean) * rstd. Which of mean and rstd depend on "
                 "x_j, and what are their derivatives?",
                 "d xhat_i / d x_j has three terms: rstd [i = j], the mean's, and the variance's. Summed against "
                 "gh = g * w each becomes a row mean. dw and db are summed over the rows (w was broadcast to them).",
                 "Rows: x.reshape(-1, n). dx = rstd * (gh - mean(gh) - xhat * mean(gh * xhat)) (row means); dw = "
                 "(g * xhat) summed over the rows, db = g summed over the rows, reshaped to w's shape."),
             _layer_norm_case, lambda cls, t, o: cls.apply(t[0], t[1], t[2], **o), _layer_norm_reference,
             inputs=("x", "w", "b"), zero_sum=_layer_norm_rows),
    Exercise("attention", "ScaledDotProductAttention", "minitorch.fused.attention:ScaledDotProductAttention",
             "scaled dot-product attention with a mask and dropout", "5-scaled-dot-product-attention-"
             "scaleddotproductattention", (
                 "Derive first: write the forward as four lines (s, w, a, out) and the rule of each line backwards: "
                 "matmul, dropout scaling, softmax, matmul with a constant.",
                 "Go from out to q, k, v one line at a time; the softmax step is the softmax exercise's formula with "
                 "dw in place of g. Do not forget the two constants: 1/(1 - p) and 1/sqrt(d).",
                 "Masked scores: np.where(mask, s, -inf); a row with no True is shifted by 0 and divided by 1. "
                 "Backward: dv = a^T g; dw = (g v^T) * keep / (1 - p); ds = w * (dw - (dw * w).sum(-1)); dq = ds k / "
                 "sqrt(d), dk = ds^T q / sqrt(d); return (dq, dk, dv, None, None)."),
             _attention_case, _attention_apply, _attention_reference, inputs=("q", "k", "v"),
             scales=_attention_scales),
    Exercise("lstm_cell", "LSTMCellFunction", "minitorch.fused.lstm_cell:LSTMCellFunction",
             "the LSTM cell (gates i, f, g, o)", "6-the-lstm-cell-lstmcellfunction", (
                 "Derive first: c = f c_prev + i g and h = o tanh(c). Through how many paths does L depend on c?",
                 "Two: directly (gc) and through h. They add. Each gate is then one factor of a product, times its "
                 "activation's derivative (sigmoid: s (1 - s); tanh: 1 - t^2).",
                 "Save i, f, g, o, c_prev and tanh(c). dc = gc + gh o (1 - tanh(c)^2); di = dc g, df = dc c_prev, "
                 "dg = dc i, do = gh tanh(c), each times its activation's derivative; dc_prev = dc f."),
             _lstm_case, lambda cls, t, o: cat(list(cls.apply(t[0], t[1])), dim=-1),
             lambda t, o: cat(list(F.lstm_cell(t[0], t[1])), dim=-1), inputs=("gates", "c_prev"), outputs=("h", "c")),
]


# ----- beyond the Transformer: the convolution of PyTorch's 60-minute blitz -----
def _conv2d_case(draw, st, hnp):
    kh, kw = draw(st.integers(2, 3)), draw(st.sampled_from([1, 3]))   # rows of 1 (broadcast-like) or 3 and more
    w = window((kh, kw), (draw(st.integers(1, 2)), draw(st.integers(1, 2))),
               (draw(st.integers(0, 1)), draw(st.integers(0, 1))), (draw(st.integers(1, 2)), 1))
    n, c, o = draw(st.integers(1, 2)), draw(st.integers(1, 2)), draw(st.sampled_from([1, 3]))
    h, wide = (draw(st.integers(w.dh * (kh - 1) + 1, w.dh * (kh - 1) + 3)), draw(st.integers(3, 5)))
    x, weight, bias = _values(draw, st, (n, c, h, wide)), _values(draw, st, (o, c, kh, kw)), _values(draw, st, (o,))
    return Case([x, weight, bias], {"w": w}, f"x {x.shape}, weight {weight.shape}, stride ({w.sh}, {w.sw}), "
                                             f"padding ({w.ph}, {w.pw}), dilation ({w.dh}, {w.dw})")


CONV_EXERCISES = [
    Exercise("conv2d", "Conv2d", "minitorch.ops.conv:Conv2d", "a 2-D convolution as im2col and a product",
             "convolution-as-im2col-conv2d", (
                 "Derive first: with cols2 = im2col(x) (N, K, L), out = W2 @ cols2 + bias. What are dW2, dbias and "
                 "dcols2 (the MatMul exercise)? Then: which places of x did each entry of cols come from?",
                 "dcols2 = W2^T g; dW2 = sum over n of g[n] cols2[n]^T; dbias = g summed over n, y, z. col2im walks "
                 "the kernel offsets (i, j) as im2col does and adds dcols[:, :, i, j] into the strided slice of a "
                 "zero padded dx it was copied from.",
                 "padded = zeros((N, C, H + 2 ph, W + 2 pw)); for i, j: padded[:, :, i*dh : i*dh + sh*(Ho-1) + 1 : "
                 "sh, j*dw : j*dw + sw*(Wo-1) + 1 : sw] += dcols[:, :, i, j]; dx = padded[:, :, ph:ph+H, pw:pw+W]."),
             _conv2d_case, lambda cls, t, o: cls.apply(t[0], t[1], t[2], w=o["w"]),
             lambda t, o: F.conv2d(t[0], t[1], t[2], (o["w"].sh, o["w"].sw), (o["w"].ph, o["w"].pw),
                                   (o["w"].dh, o["w"].dw)),
             inputs=("x", "weight", "bias")),
]

EXERCISES = ENGINE_EXERCISES + OP_EXERCISES + CONV_EXERCISES
BY_NAME = {e.name: e for e in EXERCISES}
