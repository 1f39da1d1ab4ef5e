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
from ...tensor import cat

DOC = "docs/backprop.md"


@dataclass
class Case:
    """One drawn input: float64 arrays (one per differentiable input; None for an absent one), the other arguments of
    `apply` (dims, masks, targets, ...), and a description for a failure message."""
    arrays: list
    options: dict
    text: str


@dataclass(frozen=True)
class Exercise:
    name: str
    cls: str                     # the Function's class name, in the stub and in the engine
    engine: str                  # "module:Class" of the engine's solution
    title: str
    anchor: str                  # the section of docs/backprop.md with the derivation
    hint: str
    draw: Callable               # (draw, st, hnp) -> Case: draw is hypothesis's data.draw
    apply: Callable              # (cls, tensors, options) -> Tensor: the graded op called as the engine calls it
    reference: Callable          # (tensors, options) -> Tensor: the engine's public op

    def solution(self):
        """The engine's own Function class for this exercise."""
        module, name = self.engine.split(":")
        return getattr(importlib.import_module(module), name)

    @property
    def doc(self):
        return f"{DOC}#{self.anchor}"


def _values(draw, st, shape, low=None, high=None, scale=1.0):
    """A float64 array of `shape` from a NumPy generator seeded by hypothesis: normal(0, scale), or uniform in
    [low, high] when the bounds are given."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    if low is None:
        return rng.standard_normal(shape) * scale
    return rng.uniform(low, high, shape)


def _shapes(draw, hnp, min_dims=1, max_dims=3):
    return draw(hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=2, max_side=3))


# ----- the primitives -----

def _broadcast_pair(draw, st, hnp, away_from_zero=False):
    out_shape = _shapes(draw, hnp)  # sides of 2 or 3, so that every broadcast dim (a 1, or a missing dim) is visible
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, base_shape=out_shape, min_dims=1,
                                                    max_dims=3)).input_shapes
    a = _values(draw, st, shapes[0])
    if away_from_zero:  # |b| in [0.5, 2]: a / b stays well conditioned for the finite differences
        b = _values(draw, st, shapes[1], 0.5, 2.0) * np.where(_values(draw, st, shapes[1]) < 0, -1.0, 1.0)
    else:
        b = _values(draw, st, shapes[1])
    return Case([a, b], {}, f"a {a.shape}, b {b.shape}")


def _reduction_case(draw, st, hnp):
    shape = _shapes(draw, hnp, min_dims=2)  # at least one dim summed and one kept
    ndim = len(shape)
    # partial reductions and keepdim=False weigh double: there the summed dims must be put back before broadcasting
    kind = draw(st.sampled_from(["one dim", "a tuple of dims", "every dim", "one dim", "a tuple of dims"]))
    if kind == "every dim":
        dim = None
    elif kind == "one dim":
        dim = draw(st.integers(-ndim, ndim - 1))
    else:  # negatives allowed, each axis once
        dim = tuple(draw(st.lists(st.integers(-ndim, ndim - 1), min_size=1, max_size=ndim - 1,
                                  unique_by=lambda d: d % ndim)))
    keepdim = draw(st.sampled_from([False, True, False]))
    return Case([_values(draw, st, shape)], {"dim": dim, "keepdim": keepdim},
                f"a {shape}, dim={dim!r}, keepdim={keepdim}")


def _matmul_case(draw, st, hnp):
    n, k, m = (draw(st.integers(2, 3)) for _ in range(3))
    batch_a, batch_b = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=2,
                                                              max_side=2)).input_shapes
    a, b = _values(draw, st, batch_a + (n, k)), _values(draw, st, batch_b + (k, m))
    return Case([a, b], {}, f"a {a.shape} @ b {b.shape}")


def _unary_case(positive=False):
    def draw_case(draw, st, hnp):
        shape = _shapes(draw, hnp, min_dims=0)
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
    n, c = draw(st.integers(2, 5)), draw(st.integers(2, 5))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    target = rng.integers(0, c, n)
    target[rng.random(n) < draw(st.sampled_from([0.0, 0.4]))] = -100
    e = draw(st.sampled_from([0.0, 0.1, 0.4]))
    reduction = draw(st.sampled_from(["mean", "sum", "none"]))
    x = _values(draw, st, (n, c), scale=2.0)
    options = {"target": target, "ignore_index": -100, "label_smoothing": e, "reduction": reduction}
    return Case([x], options, f"x {x.shape}, target {target.tolist()}, label_smoothing={e}, reduction={reduction!r}")


def _cross_entropy_apply(cls, t, o):
    return cls.apply(t[0], o["target"], ignore_index=o["ignore_index"], label_smoothing=o["label_smoothing"],
                     reduction=o["reduction"])


def _layer_norm_case(draw, st, hnp):
    normalized = tuple(draw(st.lists(st.integers(2, 4), min_size=1, max_size=2)))
    lead = tuple(draw(st.lists(st.integers(1, 3), min_size=0, max_size=2)))
    affine = draw(st.booleans())
    x = _values(draw, st, lead + normalized, scale=2.0)
    w, b = (_values(draw, st, normalized), _values(draw, st, normalized)) if affine else (None, None)
    return Case([x, w, b], {"normalized_ndim": len(normalized), "eps": 1e-5},
                f"x {x.shape} normalised over its last {len(normalized)} dims, {'with' if affine else 'no'} w and b")


def _layer_norm_reference(t, o):
    return F.layer_norm(t[0], t[0].shape[t[0].ndim - o["normalized_ndim"]:], t[1], t[2], eps=o["eps"])


def _attention_case(draw, st, hnp):
    tq, tk, d, dv = draw(st.integers(1, 3)), draw(st.integers(2, 3)), draw(st.integers(1, 3)), draw(st.integers(1, 2))
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


def _attention_reference(t, o):
    backend.manual_seed(o["seed"])
    return F.scaled_dot_product_attention(t[0], t[1], t[2], o["mask"], dropout_p=o["dropout_p"], training=True)


def _lstm_case(draw, st, hnp):
    n, h = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    gates, c_prev = _values(draw, st, (n, 4 * h), scale=1.5), _values(draw, st, (n, h))
    return Case([gates, c_prev], {}, f"gates {gates.shape}, c_prev {c_prev.shape}")


EXERCISES = [
    Exercise("mul", "Mul", "minitorch.ops:Mul", "a * b, with broadcasting", "mul-and-div-broadcasting",
             "d(ab) = b da + a db: each input's gradient is g times the other input. Return them in the broadcast "
             "shape of the output; the engine sums them back to each input's shape (autograd.unbroadcast).",
             lambda draw, st, hnp: _broadcast_pair(draw, st, hnp), lambda cls, t, o: cls.apply(t[0], t[1]),
             lambda t, o: t[0] * t[1]),
    Exercise("div", "Div", "minitorch.ops:Div", "a / b, with broadcasting", "mul-and-div-broadcasting",
             "d(a/b) = da / b - a db / b^2. Write the second term as (g / b) * (a / b): b^2 overflows first.",
             lambda draw, st, hnp: _broadcast_pair(draw, st, hnp, away_from_zero=True),
             lambda cls, t, o: cls.apply(t[0], t[1]), lambda t, o: t[0] / t[1]),
    Exercise("sum", "Sum", "minitorch.ops:Sum", "sum over dims", "sum-and-mean",
             "Every summed element gets the output's gradient unchanged. With keepdim=False the summed dims are gone "
             "from g: put them back as size 1 (reshape), then broadcast to the input's shape.",
             _reduction_case, lambda cls, t, o: cls.apply(t[0], **o),
             lambda t, o: t[0].sum(dim=o["dim"], keepdim=o["keepdim"])),
    Exercise("mean", "Mean", "minitorch.ops:Mean", "mean over dims", "sum-and-mean",
             "As sum, divided by the count of elements averaged into each output (the product of the reduced "
             "dims' sizes).",
             _reduction_case, lambda cls, t, o: cls.apply(t[0], **o),
             lambda t, o: t[0].mean(dim=o["dim"], keepdim=o["keepdim"])),
    Exercise("matmul", "MatMul", "minitorch.ops:MatMul", "a @ b, batched", "matmul",
             "Check the shapes: dA must be (..., n, k), so G (..., n, m) is multiplied by something (m, k). "
             "swapaxes(-1, -2) transposes the last two dims of a batch. Broadcast batch dims are summed back by the "
             "engine.",
             _matmul_case, lambda cls, t, o: cls.apply(t[0], t[1]), lambda t, o: t[0] @ t[1]),
    Exercise("exp", "Exp", "minitorch.ops:Exp", "exp(a)", "exp-and-log",
             "d exp(a) = exp(a) da: save the output in forward, so that backward recomputes nothing.",
             _unary_case(), lambda cls, t, o: cls.apply(t[0]), lambda t, o: t[0].exp()),
    Exercise("log", "Log", "minitorch.ops:Log", "log(a)", "exp-and-log",
             "d log(a) = da / a: save the input.",
             _unary_case(positive=True), lambda cls, t, o: cls.apply(t[0]), lambda t, o: t[0].log()),
    Exercise("softmax", "Softmax", "minitorch.fused.softmax:Softmax", "softmax along one dim", "1-softmax-softmax",
             "Forward: subtract x.max(axis=dim, keepdims=True) before exp (nothing changes, nothing overflows). "
             "Backward: in dx_j = sum_i g_i y_i ([i = j] - y_j), the [i = j] term gives g_j y_j and the rest "
             "y_j times one row sum, taken with keepdims=True so that it broadcasts back along dim.",
             _softmax_case, lambda cls, t, o: cls.apply(t[0], **o), lambda t, o: F.softmax(t[0], **o)),
    Exercise("log_softmax", "LogSoftmax", "minitorch.fused.softmax:LogSoftmax", "log-softmax along one dim",
             "2-log-softmax-logsoftmax",
             "Forward: z = x - max(x) along dim, y = z - log(sum(exp(z))). Backward: sum_i g_i [i = j] is g_j and "
             "sum_i g_i p_j is p_j times one row sum; p = exp(y) comes back from the saved output.",
             _softmax_case, lambda cls, t, o: cls.apply(t[0], **o), lambda t, o: F.log_softmax(t[0], **o)),
    Exercise("cross_entropy", "CrossEntropy", "minitorch.fused.cross_entropy:CrossEntropy",
             "cross-entropy with label smoothing, ignore_index and the three reductions",
             "3-cross-entropy-with-label-smoothing-crossentropy",
             "Build soft row by row (np.eye(C)[t] for the one-hots; any class will do on an ignored row). Row r's "
             "gradient p_r - soft_r is then scaled by what reaches that row: g for 'sum', g / n_valid for 'mean', g[r] "
             "for 'none', and 0 on an ignored row.",
             _cross_entropy_case, _cross_entropy_apply,
             lambda t, o: F.cross_entropy(t[0], o["target"], ignore_index=o["ignore_index"],
                                          label_smoothing=o["label_smoothing"], reduction=o["reduction"])),
    Exercise("layer_norm", "LayerNorm", "minitorch.fused.layer_norm:LayerNorm", "LayerNorm over the last dims",
             "4-layernorm-layernorm",
             "Work on rows: x.reshape(-1, n), w.reshape(n). d xhat_i / d x_j = rstd ([i = j] - 1/n - xhat_i xhat_j "
             "/ n); summed against gh_i each of the three terms becomes one row mean (of gh, and of gh * xhat). dw and "
             "db sum over the rows, reshaped back to w's shape.",
             _layer_norm_case, lambda cls, t, o: cls.apply(t[0], t[1], t[2], **o), _layer_norm_reference),
    Exercise("attention", "ScaledDotProductAttention", "minitorch.fused.attention:ScaledDotProductAttention",
             "scaled dot-product attention with a mask and dropout", "5-scaled-dot-product-attention-"
             "scaleddotproductattention",
             "Masked scores: np.where(mask, s, -inf) before the softmax. A row with no True has max -inf: shift it by "
             "0 instead and divide by 1 instead of its zero sum. Backward: save q, k, v, w and keep, rebuild a from "
             "them; the softmax step is exercise 8's formula with dw in place of g.",
             _attention_case, _attention_apply, _attention_reference),
    Exercise("lstm_cell", "LSTMCellFunction", "minitorch.fused.lstm_cell:LSTMCellFunction",
             "the LSTM cell (gates i, f, g, o)", "6-the-lstm-cell-lstmcellfunction",
             "Save i, f, g, o, c_prev and tanh(c). The two paths from c add: dc = gc + (the path through h). Each gate "
             "then gets dc (or gh, for o) times the other factor of its product, times its activation's derivative.",
             _lstm_case, lambda cls, t, o: cls.apply(t[0], t[1]),
             lambda t, o: cat(list(F.lstm_cell(t[0], t[1])), dim=-1)),
]
BY_NAME = {e.name: e for e in EXERCISES}
