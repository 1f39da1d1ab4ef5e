"""The cases each stub promises or forbids, checked after the drawn ones on every check (whatever --examples says),
so that an answer that would break in training cannot pass: case 1 in float32 (float32 in, float32 out), and where a
stub asks for it, the inputs near the overflow limit (a divisor of 1e200, logits near 1000), a fully masked
attention row, a 0-d input. Each is compared with the engine's op (finite differences mean nothing at 1e200), with
what the stub asked for as the hint of a failure."""
import numpy as np

from .case import Case

MAX_SHIFT = ("exp(1000) is inf: subtract the max along the dim before exp (softmax(x) = softmax(x - max x), and "
             "log-softmax likewise)")


def _float32(first):
    arrays = [None if a is None else a.astype(np.float32) for a in first.arrays]
    return Case(arrays, first.options, f"{first.text}, in float32 (training's dtype: float32 in, float32 out)"), ""


def _huge_divisor(first):
    a, b = first.arrays
    return Case([a * 1e200, b * 1e200], {}, f"a {a.shape}, b {b.shape}, both near 1e200 (the stub: b = 1e200 is a fine "
                                            f"divisor, b^2 is inf)"), \
        ("b**2 (or b * b) is inf at b = 1e200, and a number over inf is 0: write the b term from g / b and a / b, each "
         "finite where b^2 is not")


def _zero_d(first):
    return Case([np.array(0.75)], {}, "a () (a 0-d array, which the stub promises)"), \
        "a 0-d array (shape ()): write the op with whole-array NumPy calls, which take every shape"


def _near_1000(first):
    near = "values near 1000, as the stub promises"
    text = (first.text.replace("values near 0", near) if "values near 0" in first.text else f"{first.text} ({near})")
    return Case([first.arrays[0] + 1000.0, *first.arrays[1:]], first.options, text), MAX_SHIFT


def _scores_near_1000(first):
    """Scores q k^T / sqrt(d) near 1000 along each row: a first key dim of 1 everywhere, met by 1000 sqrt(d) in q."""
    q, k, v = first.arrays
    q, k = q.copy(), k.copy()
    q[..., 0], k[..., 0] = 1000.0 * np.sqrt(q.shape[-1]), 1.0
    return Case([q, k, v], first.options, f"q {q.shape}, k {k.shape}, v {v.shape}, scores near 1000 (as the stub "
                                          f"promises)"), MAX_SHIFT


def _masked_row(first):
    """Two queries, the second with nothing to attend to (a padding query)."""
    q, k, v = first.arrays
    q = np.concatenate([q[..., :1, :], 0.5 * q[..., :1, :] + 0.25], axis=-2)
    mask = np.ones((2, k.shape[-2]), dtype=bool)
    mask[0, 1], mask[1] = False, False
    options = {**first.options, "mask": mask}
    return Case([q, k, v], options, f"q {q.shape}, k {k.shape}, v {v.shape}, mask {mask.astype(int).tolist()}: a "
                                    f"query with nothing to attend to, as the stub promises"), \
        ("a row of the mask with no True: its max is -inf, and exp(-inf - (-inf)) is nan: shift such a row by 0 and "
         "divide it by 1 (its sum of exponentials is 0), so that its weights, output and gradients are 0")


# each exercise's promises beyond float32, from its stub's statement
PROMISES = {"div": [_huge_divisor], "exp": [_zero_d], "softmax": [_near_1000], "log_softmax": [_near_1000],
            "cross_entropy": [_near_1000], "attention": [_masked_row, _scores_near_1000]}


def promised_cases(exercise, first):
    """[(case, hint)]: the cases exercise's stub promises, made from its first drawn case `first`."""
    return [make(first) for make in [_float32, *PROMISES.get(exercise.name, [])]]


__all__ = ["promised_cases", "PROMISES"]
