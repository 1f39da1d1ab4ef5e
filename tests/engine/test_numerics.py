"""Gradient checks in float32 at large magnitudes: each op's float32 backward against central finite differences in
float64 of a NumPy reference written here, on inputs far from the usual O(1) range (logits of 1e4, activations that
saturate, values near float32's limits). No overflow warning may fire (pytest turns RuntimeWarning into an error),
and every value and gradient must be finite."""
import numpy as np
import pytest

import minitorch as mt
import minitorch.functional as F


def numerical_vjp(f_np, inputs, w, rel_step=1e-6):
    """d/dx of sum(w * f_np(*x)) for every element of every input, by central differences in float64 with a step
    relative to each element's size."""
    xs = [np.array(a, dtype=np.float64) for a in inputs]
    grads = []
    for x in xs:
        g = np.zeros(x.shape)
        flat = x.reshape(-1)
        for j in range(flat.size):
            original = flat[j]
            h = rel_step * max(1.0, abs(original))
            flat[j] = original + h
            up = np.sum(w * f_np(*xs))
            flat[j] = original - h
            down = np.sum(w * f_np(*xs))
            flat[j] = original
            g.reshape(-1)[j] = (up - down) / (2 * h)
        grads.append(g)
    return grads


def check_float32(f_mt, f_np, inputs, rtol=2e-3):
    """float32 value and backward(w) against float64 references; tolerances relative to the largest entry."""
    inputs = [np.asarray(a, dtype=np.float32) for a in inputs]
    leaves = [mt.tensor(a, requires_grad=True) for a in inputs]
    out = f_mt(*leaves)
    assert out.dtype == np.float32
    expected = f_np(*[a.astype(np.float64) for a in inputs])
    assert np.isfinite(out.numpy()).all()
    np.testing.assert_allclose(out.numpy(), expected, rtol=rtol, atol=rtol * max(np.abs(expected).max(), 1e-30))
    w = np.random.default_rng(1).standard_normal(out.shape)
    out.backward(mt.tensor(w.astype(np.float32)))
    for i, (leaf, numeric) in enumerate(zip(leaves, numerical_vjp(f_np, inputs, w))):
        analytic = leaf.grad.numpy()
        assert analytic.dtype == np.float32 and np.isfinite(analytic).all(), f"input {i}"
        scale = max(np.abs(numeric).max(), 1e-4)   # gradients below ~1e-7 count as zero (weights w are O(1))
        np.testing.assert_allclose(analytic, numeric, rtol=rtol, atol=rtol * scale, err_msg=f"input {i}")


# ----- NumPy references (float64), independent of the code under test -----
def ref_sigmoid(x):
    return np.where(x >= 0, 1 / (1 + np.exp(-np.abs(x))), np.exp(-np.abs(x)) / (1 + np.exp(-np.abs(x))))


def ref_gelu(x):
    u = np.sqrt(2 / np.pi) * (x + 0.044715 * np.clip(x, -1e5, 1e5) ** 3)
    return 0.5 * x * (1 + np.tanh(u))


def ref_log_softmax(x):
    s = x - x.max(axis=-1, keepdims=True)
    return s - np.log(np.exp(s).sum(axis=-1, keepdims=True))


def ref_cross_entropy(x, target, smoothing):
    logp = ref_log_softmax(x)
    q = np.full(x.shape, smoothing / x.shape[-1])
    q[np.arange(len(target)), target] += 1 - smoothing
    return -(q * logp).sum(axis=-1).mean()


def ref_layer_norm(x, w, b):
    m = x.mean(axis=-1, keepdims=True)
    v = ((x - m) ** 2).mean(axis=-1, keepdims=True)
    return (x - m) / np.sqrt(v + 1e-5) * w + b


def ref_attention(q, k, v):
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    return np.exp(ref_log_softmax(scores)) @ v


def ref_lstm(gates, c_prev):
    H = c_prev.shape[-1]
    i, f, o = (ref_sigmoid(gates[:, a * H:(a + 1) * H]) for a in (0, 1, 3))
    c = f * c_prev + i * np.tanh(gates[:, 2 * H:3 * H])
    return np.concatenate([o * np.tanh(c), c], axis=-1)


rng = np.random.default_rng(0)


def normal(*shape, scale=1.0, offset=0.0):
    return (offset + scale * rng.standard_normal(shape)).astype(np.float32)


@pytest.mark.parametrize("scale", [1e2, 1e4, 1e30])
@pytest.mark.parametrize("name, f_mt, f_np", [
    ("sigmoid", lambda x: x.sigmoid(), ref_sigmoid),
    ("tanh", lambda x: x.tanh(), np.tanh),
    ("gelu", lambda x: x.gelu(), ref_gelu),
    ("relu", lambda x: x.relu(), lambda x: np.maximum(x, 0)),
    ("abs", lambda x: x.abs(), np.abs),
    ("sqrt", lambda x: x.abs().sqrt(), lambda x: np.sqrt(np.abs(x))),
    ("max", lambda x: x.amax(dim=-1), lambda x: x.max(axis=-1)),
    ("mean", lambda x: x.mean(dim=-1), lambda x: x.mean(axis=-1)),
    ("reciprocal", lambda x: 1.0 / x, lambda x: 1.0 / x),
    ("softmax", lambda x: F.softmax(x, -1), lambda x: np.exp(ref_log_softmax(x))),
    ("log_softmax", lambda x: F.log_softmax(x, -1), ref_log_softmax),
])
def test_elementwise_and_row_ops_at_large_magnitudes(name, f_mt, f_np, scale):
    x = normal(3, 5, scale=scale)
    x[np.abs(x) < scale / 10] = scale / 2   # keep away from 0, where abs, relu, 1/x have their kinks and poles
    check_float32(f_mt, f_np, [x])


@pytest.mark.parametrize("offset", [1e3, -1e4])
def test_softmax_family_with_a_large_common_offset(offset):
    x = normal(4, 6, scale=2.0, offset=offset)   # meaningful gradients: the rows differ by O(1) around the offset
    check_float32(lambda t: F.softmax(t, -1), lambda a: np.exp(ref_log_softmax(a)), [x])
    check_float32(lambda t: F.log_softmax(t, -1), ref_log_softmax, [x])
    target = np.array([0, 5, 2, 3])
    check_float32(lambda t: F.cross_entropy(t, mt.tensor(target), label_smoothing=0.1),
                  lambda a: ref_cross_entropy(a, target, 0.1), [x])


@pytest.mark.parametrize("scale, offset", [(1e4, 0.0), (10.0, 1e4)])
def test_layer_norm_at_large_scale_and_offset(scale, offset):
    x, w, b = normal(3, 8, scale=scale, offset=offset), normal(8), normal(8)
    check_float32(lambda t, u, v: F.layer_norm(t, 8, u, v), ref_layer_norm, [x, w, b], rtol=5e-3)


def test_attention_with_saturating_scores():
    q, k, v = normal(2, 3, 4, scale=30.0), normal(2, 5, 4, scale=30.0), normal(2, 5, 4)
    check_float32(lambda a, b, c: F.scaled_dot_product_attention(a, b, c), ref_attention, [q, k, v], rtol=5e-3)


@pytest.mark.parametrize("scale", [1e4, 1e30])
def test_lstm_cell_with_saturated_gates(scale):
    gates, c_prev = normal(2, 12, scale=scale), normal(2, 3)
    check_float32(lambda g, c: mt.cat(list(F.lstm_cell(g, c)), dim=-1), ref_lstm, [gates, c_prev])


def test_division_and_power_near_the_float32_limit():
    a, b = normal(2, 3, scale=1e19), normal(2, 3, scale=1e19)
    b[np.abs(b) < 1e18] = 5e18
    check_float32(lambda x, y: x / y, lambda x, y: x / y, [a, b])
    check_float32(lambda x: x ** 2, lambda x: x ** 2, [normal(2, 3, scale=1e18)])
