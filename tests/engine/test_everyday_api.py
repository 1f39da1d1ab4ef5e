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


# ----- PyTorch's everyday names: top-level functions, size()/dim()/numel(), max(dim), mm, round, nn.functional -----
@settings(max_examples=10)
@given(values(), values((4, 2)))
def test_top_level_functions_are_the_methods(x, m):
    check(mt.sigmoid, lambda a: 1 / (1 + np.exp(-a)), x)
    check(mt.tanh, np.tanh, x)
    check(mt.exp, np.exp, x)
    check(lambda a: mt.log(a * a + 1), lambda a: np.log(a * a + 1), x)
    check(lambda a: mt.sum(a, 1), lambda a: a.sum(1), x)
    check(lambda a: mt.mean(a, dim=0, keepdim=True), lambda a: a.mean(0, keepdims=True), x)
    check(lambda a: mt.softmax(a, -1), lambda a: np.exp(a) / np.exp(a).sum(-1, keepdims=True), x)
    check(mt.mm, np.matmul, x, m)
    check(lambda a, b: a.mm(b), np.matmul, x, m)
    kinkless = np.where(np.abs(x) < 1e-3, 0.5, x)
    check(mt.relu, lambda a: np.maximum(a, 0), kinkless)
    check(lambda a: mt.clamp(a, min=0.0), lambda a: np.maximum(a, 0), kinkless)
    assert mt.argmax(mt.tensor(x, dtype=mt.float64), dim=1).tolist() == np.argmax(x, 1).tolist()


def test_mm_allclose_is_tensor():
    with pytest.raises(RuntimeError, match=r"mm: input must be a 2-D Tensor, got shape \(2, 2, 2\)"):
        mt.mm(mt.ones(2, 2, 2), mt.ones(2, 2))
    with pytest.raises(RuntimeError, match=r"mm: shapes \(2, 3\) and \(2, 3\) cannot be multiplied"):
        mt.ones(2, 3).mm(mt.ones(2, 3))
    a = mt.tensor([1.0, 2.0])
    assert mt.allclose(a, a + 1e-6) is True and mt.allclose(a, a + 1e-3) is False
    assert mt.is_tensor(a) and mt.is_tensor(nn.Linear(1, 1).weight) and not mt.is_tensor(np.ones(2))


def test_size_is_pytorchs_and_numel_counts():
    x = mt.zeros(2, 3, 4)
    assert x.size() == (2, 3, 4) and x.size(1) == 3 and x.size(-1) == 4 and x.dim() == 3 and x.numel() == 24
    assert mt.tensor(1.0).size() == () and mt.tensor(1.0).dim() == 0
    with pytest.raises(IndexError, match="size: dim 3 is out of range for a tensor of 3 dims"):
        x.size(3)
    with pytest.raises(IndexError, match="0-d tensor"):
        mt.tensor(1.0).size(0)
    with pytest.raises(TypeError, match="size: dim must be an int"):
        x.size("1")


def test_max_with_a_dim_gives_values_and_indices_and_the_gradient_goes_to_the_index():
    x = mt.tensor([[1.0, 3.0, 3.0], [2.0, -1.0, 0.0]], dtype=mt.float64, requires_grad=True)
    values, indices = x.max(1)
    result = x.max(dim=1, keepdim=True)
    assert values.tolist() == [3.0, 2.0] and indices.tolist() == [1, 0] and indices.dtype == np.int64
    assert result.values.shape == result.indices.shape == (2, 1)
    assert x.max().item() == 3.0 and x.max().shape == ()
    values.sum().backward()   # ties: all to the first maximum's index, as PyTorch's max(dim) (amax splits)
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 1, 0], [1, 0, 0]])
    with pytest.raises(TypeError, match="amax takes several dims"):
        x.max(dim=(0, 1))
    v, i = mt.tensor(2.0).max(0)
    assert v.item() == 2.0 and i.item() == 0


def test_round_halves_to_even_and_carries_no_gradient():
    x = mt.tensor([0.5, 1.5, -2.5, 2.567], dtype=mt.float64, requires_grad=True)
    np.testing.assert_array_equal(x.round().numpy(), [0.0, 2.0, -2.0, 3.0])
    np.testing.assert_allclose(x.round(decimals=2).numpy(), [0.5, 1.5, -2.5, 2.57])
    (x - x.round()).sum().backward()   # round's own gradient is 0 (PyTorch's), so only x's path counts
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 1.0, 1.0, 1.0])
    with pytest.raises(RuntimeError, match="round"):
        x.round().sum().backward()


def test_nn_functional_is_the_functional_api():
    import minitorch.nn.functional as nnF
    assert nn.functional is nnF and nnF.__all__ == F.__all__
    assert all(getattr(nnF, name) is getattr(F, name) for name in F.__all__)
    assert mt.softmax is F.softmax and set(dir(nnF)) == set(F.__all__)


@pytest.mark.parametrize("data", [["a", "b"], [object()], np.array(["1"])])
def test_strings_and_objects_are_refused_when_the_tensor_is_made(data):
    with pytest.raises(TypeError, match=r"tensor: dtype (<U1|object) .*cannot make a tensor"):
        mt.tensor(data)
    with pytest.raises(TypeError, match="cannot make a tensor"):
        mt.tensor([1.0], dtype=str)


def test_everyday_names_match_pytorch():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed: the comparison with it is skipped")
    x = np.array([[0.3, -2.0, 1.5, 1.5], [4.0, -0.1, 0.0, 4.0], [0.5, 2.5, -0.5, -1.5]])
    m = np.arange(8.0).reshape(4, 2) / 3
    ours, theirs = mt.tensor(x, dtype=mt.float64, requires_grad=True), torch.tensor(x, requires_grad=True)
    for f in ["sigmoid", "tanh", "relu", "exp"]:
        np.testing.assert_allclose(getattr(mt, f)(ours).detach().numpy(),
                                   getattr(torch, f)(theirs).detach().numpy(), rtol=1e-14)
    pairs = [(mt.log(ours.abs() + 1), torch.log(theirs.abs() + 1)), (mt.sum(ours, 0), torch.sum(theirs, 0)),
             (mt.mean(ours, 1, keepdim=True), torch.mean(theirs, 1, keepdim=True)),
             (mt.softmax(ours, 1), torch.softmax(theirs, 1)), (mt.clamp(ours, -1, 1), torch.clamp(theirs, -1, 1)),
             (mt.mm(ours, mt.tensor(m, dtype=mt.float64)), torch.mm(theirs, torch.tensor(m))),
             (ours.round(), theirs.round()), (ours.round(decimals=1), theirs.round(decimals=1)),
             (ours.max(1).values, theirs.max(1).values), (ours.max(0, keepdim=True).values,
                                                          theirs.max(0, keepdim=True).values)]
    for a, b in pairs:
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-14)
    assert ours.max(1).indices.tolist() == theirs.max(1).indices.tolist()
    assert mt.argmax(ours, 1).tolist() == torch.argmax(theirs, 1).tolist()
    assert (ours.size(), ours.size(1), ours.dim(), ours.numel()) == (tuple(theirs.size()), theirs.size(1),
                                                                     theirs.dim(), theirs.numel())
    assert mt.allclose(ours, ours + 1e-7) == torch.allclose(theirs, theirs + 1e-7)
    loss_ours = (ours.max(1).values * mt.tensor([1.0, 2.0, 3.0], dtype=mt.float64)).sum() + ours.max()
    loss_theirs = (theirs.max(1).values * torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)).sum() + theirs.max()
    loss_ours.backward()
    loss_theirs.backward()   # max(dim) with ties (rows 0 and 1) and max() with one maximum
    np.testing.assert_array_equal(ours.grad.numpy(), theirs.grad.numpy())


def test_item_assignment_in_place_and_recorded_in_the_graph_as_pytorch():
    t = mt.zeros(2, 3)
    t[:, 1] = 5
    t[0, mt.tensor([0, 2])] = mt.tensor([1.0, 2.0])
    np.testing.assert_array_equal(t.numpy(), [[1, 5, 2], [0, 5, 0]])
    assert t._version == 2
    a = mt.tensor([1.0, 2.0, 3.0], dtype=mt.float64, requires_grad=True)
    x = a * a
    x[1] = 0.0                                   # the gradient to a[1] is cut there, as in PyTorch
    (x * mt.tensor([1.0, 10.0, 100.0], dtype=mt.float64)).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), [2.0, 0.0, 600.0])
    with pytest.raises(RuntimeError, match="refused|in-place op on a leaf"):
        a[0] = 1.0                               # a leaf that requires grad, outside no_grad
    with pytest.raises(RuntimeError, match="a value that requires grad"):
        x[0] = a[1]


def test_item_assignment_gradient_is_pytorchs():
    torch = pytest.importorskip("torch")
    values = np.array([0.5, -1.5, 2.0, 3.0])

    def run(lib, dtype):
        a = lib.tensor(values, dtype=dtype, requires_grad=True)
        x = a.sin() * 3
        x[1:3] = lib.tensor([7.0, 8.0], dtype=dtype)
        (x.square() * a).sum().backward()
        return x.detach().numpy(), a.grad.numpy()

    ours, theirs = run(mt, mt.float64), run(torch, torch.float64)
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o, t, rtol=1e-12)


def test_method_forms_pow_sin_cos_square_grad_fn_and_type():
    a = mt.tensor([0.5, 1.5], dtype=mt.float64, requires_grad=True)
    np.testing.assert_allclose(a.pow(3).numpy(), [0.125, 3.375])
    np.testing.assert_allclose(a.square().numpy(), [0.25, 2.25])
    np.testing.assert_allclose(a.sin().numpy(), np.sin([0.5, 1.5]))
    np.testing.assert_allclose(a.cos().numpy(), np.cos([0.5, 1.5]))
    assert a.grad_fn is None and type(a.sin().grad_fn).__name__ == "Sin"
    assert a.type() == "float64" and a.type(mt.float32).dtype == np.float32
    assert mt.gradcheck(lambda x: x.pow(3) + x.square().sin(), [a])
