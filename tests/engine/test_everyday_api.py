"""The everyday PyTorch surface (nn.Tanh, nn.Sigmoid, nn.GELU, nn.MSELoss, nn.BCELoss, nn.BCEWithLogitsLoss,
nn.CrossEntropyLoss, F.sigmoid, F.tanh, F.mse_loss, F.binary_cross_entropy(_with_logits), Tensor.t, clamp, zero_,
clone, mt.matmul): values against NumPy formulas written here, gradients against central differences in float64."""
import math
import runpy
from pathlib import Path

import numpy as np
import pytest
from finite_differences import vjp
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minitorch as mt
import minitorch.functional as F
from minitorch import nn

ROOT = Path(__file__).resolve().parents[2]


def check(f_mt, f_np, *arrays, rtol=1e-6, atol=1e-8):
    """f_mt's value equals f_np's, and its gradients (of sum(w * f)) equal central differences of f_np."""
    w = np.random.default_rng(1).standard_normal(np.shape(f_np(*arrays)))
    ts = [mt.tensor(a, dtype=mt.float64, requires_grad=True) for a in arrays]
    out = f_mt(*ts)
    np.testing.assert_allclose(out.numpy(), f_np(*arrays), rtol=1e-10, atol=1e-12)
    (out * mt.tensor(w, dtype=mt.float64)).sum().backward()
    expected = vjp(f_np, arrays, w)
    for t, e in zip(ts, expected):
        np.testing.assert_allclose(t.grad.numpy(), e, rtol=rtol, atol=atol)


def values(shape=(3, 4), low=-3.0, high=3.0):
    return hnp.arrays(np.float64, shape, elements=st.floats(low, high))


def probabilities(shape=(3, 4)):
    return hnp.arrays(np.float64, shape, elements=st.floats(0.05, 0.95))


def targets(shape=(3, 4)):
    return hnp.arrays(np.float64, shape, elements=st.floats(0.0, 1.0))


def reduce_np(loss, reduction):
    return {"mean": loss.mean(), "sum": loss.sum(), "none": loss}[reduction]


REDUCTION = st.sampled_from(["mean", "sum", "none"])


@settings(max_examples=10)
@given(values())
def test_sigmoid_tanh_and_their_modules(x):
    check(F.sigmoid, lambda a: 1 / (1 + np.exp(-a)), x)
    check(F.tanh, np.tanh, x)
    check(nn.Sigmoid(), lambda a: 1 / (1 + np.exp(-a)), x)
    check(nn.Tanh(), np.tanh, x)


@settings(max_examples=10)
@given(values())
def test_gelu_exact_and_tanh_forms(x):
    erf = np.vectorize(math.erf)
    check(nn.GELU(approximate="none"), lambda a: 0.5 * a * (1 + erf(a / math.sqrt(2))), x)
    c = math.sqrt(2 / math.pi)
    check(nn.GELU(), lambda a: 0.5 * a * (1 + np.tanh(c * (a + 0.044715 * a ** 3))), x)
    with pytest.raises(ValueError, match="approximate must be 'tanh' or 'none'"):
        nn.GELU("exact")


@settings(max_examples=10)
@given(values(), values(), REDUCTION)
def test_mse_loss(x, t, reduction):
    check(lambda a, b: F.mse_loss(a, b, reduction=reduction), lambda a, b: reduce_np((a - b) ** 2, reduction), x, t)
    check(nn.MSELoss(reduction=reduction), lambda a, b: reduce_np((a - b) ** 2, reduction), x, t)


@settings(max_examples=10)
@given(probabilities(), targets(), REDUCTION)
def test_binary_cross_entropy(p, t, reduction):
    def ref(p, t):
        return reduce_np(-(t * np.log(p) + (1 - t) * np.log(1 - p)), reduction)
    check(lambda a, b: F.binary_cross_entropy(a, b, reduction=reduction), ref, p, t)
    w = mt.tensor(np.linspace(0.5, 2, 4), dtype=mt.float64)
    check(nn.BCELoss(weight=w, reduction=reduction),
          lambda p, t: reduce_np(-(t * np.log(p) + (1 - t) * np.log(1 - p)) * w.numpy(), reduction), p, t)


def test_binary_cross_entropy_is_finite_at_probabilities_0_and_1():
    p = mt.tensor([0.0, 1.0, 0.5], dtype=mt.float64, requires_grad=True)
    loss = F.binary_cross_entropy(p, mt.tensor([1.0, 0.0, 1.0], dtype=mt.float64), reduction="none")
    np.testing.assert_allclose(loss.numpy(), [100.0, 100.0, math.log(2)], rtol=1e-12)   # PyTorch's -100 floor
    loss.sum().backward()
    assert np.isfinite(p.grad.numpy()).all()


@settings(max_examples=10)
@given(values(low=-6, high=6), targets(), REDUCTION, st.booleans())
def test_binary_cross_entropy_with_logits(x, t, reduction, weighted):
    pos_weight = np.array([1.0, 2.0, 0.5, 3.0]) if weighted else None

    def ref(x, t):
        log_s, log_not_s = -np.log1p(np.exp(-x)), -np.log1p(np.exp(x))
        pos = t * log_s * (pos_weight if weighted else 1)
        return reduce_np(-(pos + (1 - t) * log_not_s), reduction)

    pw = mt.tensor(pos_weight, dtype=mt.float64) if weighted else None
    check(lambda a, b: F.binary_cross_entropy_with_logits(a, b, reduction=reduction, pos_weight=pw), ref, x, t)
    check(nn.BCEWithLogitsLoss(reduction=reduction, pos_weight=pw), ref, x, t)


def test_binary_cross_entropy_with_logits_is_exact_for_huge_logits():
    x = mt.tensor([1000.0, -1000.0, 0.0], requires_grad=True)
    loss = F.binary_cross_entropy_with_logits(x, mt.tensor([0.0, 0.0, 1.0]), reduction="none")
    np.testing.assert_allclose(loss.numpy(), [1000.0, 0.0, math.log(2)], rtol=1e-6)
    loss.sum().backward()    # d/dx = sigmoid(x) - t
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 0.0, -0.5], atol=1e-6)


def np_cross_entropy(x, t, ignore_index, smoothing, reduction):
    z = x - x.max(-1, keepdims=True)
    log_p = z - np.log(np.exp(z).sum(-1, keepdims=True))
    C = x.shape[-1]
    valid = t != ignore_index
    q = np.eye(C)[np.where(valid, t, 0)] * (1 - smoothing) + smoothing / C
    loss = -(q * log_p).sum(-1) * valid
    if reduction == "mean":
        return loss.sum() / max(valid.sum(), 1)
    return loss.sum() if reduction == "sum" else loss


@settings(max_examples=10)
@given(values((5, 3)), hnp.arrays(np.int64, 5, elements=st.integers(-1, 2)), st.floats(0, 0.3), REDUCTION)
def test_cross_entropy_loss_module(x, t, smoothing, reduction):
    loss = nn.CrossEntropyLoss(ignore_index=-1, reduction=reduction, label_smoothing=smoothing)
    check(lambda a: loss(a, t), lambda a: np_cross_entropy(a, t, -1, smoothing, reduction), x)
    one = 0 if t[0] == -1 else int(t[0])       # one unbatched sample: logits (C,), a class id

    def one_sample(a):
        return np_cross_entropy(a[:1], np.array([one]), -1, smoothing, reduction).reshape(())
    check(lambda a: loss(a[0], one), one_sample, x)


def test_cross_entropy_loss_refuses_what_it_would_get_wrong():
    with pytest.raises(NotImplementedError, match="class weights"):
        nn.CrossEntropyLoss(weight=mt.ones(3))
    with pytest.raises(ValueError, match=r"\(N, C, d1, ...\) puts the classes second"):
        nn.CrossEntropyLoss()(mt.zeros(2, 3, 4), mt.zeros(2, 4, dtype=mt.int64))
    with pytest.raises(ValueError, match="reduction must be one of"):
        nn.MSELoss(reduction="avg")
    with pytest.raises(ValueError, match=r"mse_loss: target of shape \(3,\) for input of shape \(3, 1\)"):
        F.mse_loss(mt.zeros(3, 1), mt.zeros(3))


def test_clamp_gradient_is_one_inside_and_at_the_bounds_as_pytorch():
    x = mt.tensor([-2.0, 0.0, 0.5, 1.0, 3.0], dtype=mt.float64, requires_grad=True)
    y = x.clamp(min=0.0, max=1.0)
    np.testing.assert_array_equal(y.numpy(), [0.0, 0.0, 0.5, 1.0, 1.0])
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 1.0, 1.0, 1.0, 0.0])
    np.testing.assert_array_equal(x.clamp(max=0.2).numpy(), np.minimum(x.numpy(), 0.2))
    with pytest.raises(ValueError, match="at least one of min and max"):
        x.clamp()


@settings(max_examples=10)
@given(values(low=-2, high=2))
def test_clamp_away_from_the_bounds_against_central_differences(x):
    x = np.where(np.abs(np.abs(x) - 1) < 1e-3, 0.0, x)    # not within eps of a kink
    check(lambda a: a.clamp(-1.0, 1.0), lambda a: np.clip(a, -1.0, 1.0), x)


@settings(max_examples=10)
@given(values((2, 3)), values((3,)), values((4, 2, 3)))
def test_t_matmul_clone(a, v, batch):
    check(lambda m: m.t(), lambda m: m.T, a)
    check(lambda m: m.clone() * 2, lambda m: m * 2, a)
    check(lambda m, u: mt.matmul(m, u), lambda m, u: m @ u, a, v)
    check(lambda b, m: mt.matmul(b, m.t()), lambda b, m: b @ m.T, batch, a)
    assert mt.tensor(v).t().shape == (3,)
    with pytest.raises(RuntimeError, match="t\\(\\) expects a tensor with <= 2 dims"):
        mt.tensor(batch).t()


def test_zero_and_the_other_in_place_ops_keep_the_tensor():
    t = mt.ones(2, 3)
    assert t.zero_() is t and not t.numpy().any()


def test_functional_lists_its_api_not_its_imports():
    assert "np" not in dir(F) and "backend" not in dir(F)
    assert set(dir(F)) == set(F.__all__) and all(callable(getattr(F, name)) for name in F.__all__)


def test_the_xor_script_written_from_pytorch_habits_runs_and_learns(capsys):
    script = runpy.run_path(str(ROOT / "examples" / "xor.py"))
    accuracy, loss = script["main"]()
    assert accuracy == 1.0 and loss < 0.05
    source = (ROOT / "examples" / "xor.py").read_text()
    imports = [line for line in source.splitlines() if line.startswith(("import", "from"))]
    assert imports == ["import minitorch as torch", "from minitorch import nn"]   # all else is PyTorch code


def test_everyday_api_matches_pytorch():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed: the comparison with it is skipped")
    x = np.array([[0.3, -2.0, 1.5], [4.0, -0.1, 0.0]])
    t = np.array([[0.0, 1.0, 0.3], [1.0, 0.0, 0.5]])
    for ours, theirs in [(F.binary_cross_entropy_with_logits, torch.nn.functional.binary_cross_entropy_with_logits),
                         (F.mse_loss, torch.nn.functional.mse_loss)]:
        np.testing.assert_allclose(ours(mt.tensor(x, dtype=mt.float64), mt.tensor(t, dtype=mt.float64)).numpy(),
                                   theirs(torch.tensor(x), torch.tensor(t)).numpy(), rtol=1e-12)
    np.testing.assert_allclose(
        nn.CrossEntropyLoss(label_smoothing=0.1)(mt.tensor(x, dtype=mt.float64), mt.tensor([2, 0])).numpy(),
        torch.nn.CrossEntropyLoss(label_smoothing=0.1)(torch.tensor(x), torch.tensor([2, 0])).numpy(), rtol=1e-12)


def test_erf_agrees_with_math_erf_everywhere_on_both_devices(device):
    grid = np.concatenate([np.linspace(-8, 8, 20001), [0.0, 1e-300, -1e-8, 2.9999999, 3.0, 3.0000001]])
    got = mt.ops.array_ops.erf(mt.tensor(grid, dtype=mt.float64, device=device)).numpy()
    np.testing.assert_allclose(got, [math.erf(v) for v in grid], rtol=2e-15, atol=2e-15)
    assert mt.ops.array_ops.erf(mt.ones(2, device=device)).dtype == np.float32
