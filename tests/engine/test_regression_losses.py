"""F.l1_loss, F.smooth_l1_loss (beta), F.huber_loss (delta) and their modules: values and gradients against NumPy
forms written here (central differences in float64, first and second order), against torch.nn.functional (values,
gradients, dtypes, errors) and on both devices."""
import numpy as np
import pytest
from finite_differences import second_order, vjp

import minitorch as mt
import minitorch.functional as F
from minitorch import nn

RNG = np.random.default_rng(11)


def smooth_l1_np(x, y, beta):
    d = np.abs(x - y)
    return d if beta == 0 else np.where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta)


def huber_np(x, y, delta):
    d = np.abs(x - y)
    return np.where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta))


def reduce_np(loss, reduction):
    return loss.mean() if reduction == "mean" else loss.sum() if reduction == "sum" else loss


def away_from_kinks(shape, edges):
    """x, y with |x - y| at least 0.05 from every edge (0, beta or delta): finite differences cross no kink."""
    x, y = RNG.standard_normal(shape) * 2, RNG.standard_normal(shape)
    d = x - y
    for edge in edges:
        for sign in (1, -1):
            near = np.abs(d - sign * edge) < 0.05
            d = np.where(near, d + 0.1, d)
    return y + d, y


LOSSES = [("smooth_l1", 0.0), ("smooth_l1", 0.5), ("smooth_l1", 1.0), ("smooth_l1", 2.5), ("huber", 0.5),
          ("huber", 1.0), ("huber", 2.0), ("l1", None)]


def ours(kind, x, y, option, reduction="mean"):
    if kind == "smooth_l1":
        return F.smooth_l1_loss(x, y, reduction=reduction, beta=option)
    if kind == "huber":
        return F.huber_loss(x, y, reduction=reduction, delta=option)
    return F.l1_loss(x, y, reduction=reduction)


def numpy_form(kind, option):
    if kind == "smooth_l1":
        return lambda x, y: smooth_l1_np(x, y, option)
    if kind == "huber":
        return lambda x, y: huber_np(x, y, option)
    return lambda x, y: np.abs(x - y)


@pytest.mark.parametrize("kind, option", LOSSES)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_values_and_gradients_against_finite_differences(kind, option, reduction):
    x, y = away_from_kinks((4, 5), [0.0] + ([option] if option else []))
    xt, yt = (mt.tensor(a, dtype=np.float64, requires_grad=True) for a in (x, y))
    loss = ours(kind, xt, yt, option, reduction)
    expected = reduce_np(numpy_form(kind, option)(x, y), reduction)
    np.testing.assert_allclose(loss.numpy(), expected, rtol=1e-12, atol=1e-14)
    w = RNG.standard_normal(loss.shape)
    (loss * mt.tensor(w, dtype=np.float64)).sum().backward()
    gx, gy = vjp(lambda a, b: reduce_np(numpy_form(kind, option)(a, b), reduction), [x, y], w)
    np.testing.assert_allclose(xt.grad.numpy(), gx, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(yt.grad.numpy(), gy, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("kind, option", [k for k in LOSSES if k[1]])
def test_second_order_against_finite_differences(kind, option):
    x, y = away_from_kinks((3, 4), [0.0, option])
    w, v = RNG.standard_normal((3, 4)), [RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4))]
    xt, yt = (mt.tensor(a, dtype=np.float64, requires_grad=True) for a in (x, y))
    loss = (ours(kind, xt, yt, option, "none") * mt.tensor(w, dtype=np.float64)).sum()
    gx, gy = mt.autograd.grad(loss, [xt, yt], create_graph=True)
    directional = (gx * mt.tensor(v[0], dtype=np.float64)).sum() + (gy * mt.tensor(v[1], dtype=np.float64)).sum()
    hx, hy = mt.autograd.grad(directional, [xt, yt])
    expected, _ = second_order(numpy_form(kind, option), [x, y], w, v)
    np.testing.assert_allclose(hx.numpy(), expected[0], rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(hy.numpy(), expected[1], rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("kind, option", LOSSES)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_matches_torch_at_and_between_the_kinks(kind, option, reduction, dtype):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed: the comparison with it is skipped")
    edge = option or 1.0
    d = np.array([0.0, edge, -edge, 0.5 * edge, -0.3 * edge, 2 * edge, -3 * edge, 1e-3])   # 0 and the edges
    x = (RNG.standard_normal(8) + d).astype(dtype)
    y = (x - d).astype(dtype)
    xs = mt.tensor(x, dtype=dtype, requires_grad=True), torch.tensor(x, requires_grad=True)
    ys = mt.tensor(y, dtype=dtype, requires_grad=True), torch.tensor(y, requires_grad=True)
    tf = torch.nn.functional
    if kind == "smooth_l1":
        ref = tf.smooth_l1_loss(xs[1], ys[1], reduction=reduction, beta=option)
    elif kind == "huber":
        ref = tf.huber_loss(xs[1], ys[1], reduction=reduction, delta=option)
    else:
        ref = tf.l1_loss(xs[1], ys[1], reduction=reduction)
    got = ours(kind, xs[0], ys[0], option, reduction)
    assert got.dtype == np.dtype(dtype) and got.shape == tuple(ref.shape)
    tol = dict(rtol=1e-6, atol=1e-6) if dtype == "float32" else dict(rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(got.numpy(), ref.detach().numpy(), **tol)
    w = RNG.standard_normal(got.shape).astype(dtype)
    (got * mt.tensor(w, dtype=dtype)).sum().backward()
    (ref * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(xs[0].grad.numpy(), xs[1].grad.numpy(), **tol)
    np.testing.assert_allclose(ys[0].grad.numpy(), ys[1].grad.numpy(), **tol)


def test_modules_and_errors_as_torch():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed: the comparison with it is skipped")
    x, y = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4))
    pairs = [(nn.SmoothL1Loss(beta=0.5), torch.nn.SmoothL1Loss(beta=0.5)),
             (nn.SmoothL1Loss(reduction="sum"), torch.nn.SmoothL1Loss(reduction="sum")),
             (nn.HuberLoss(delta=2.0, reduction="none"), torch.nn.HuberLoss(delta=2.0, reduction="none")),
             (nn.L1Loss(), torch.nn.L1Loss())]
    for mine, theirs in pairs:
        np.testing.assert_allclose(mine(mt.tensor(x, dtype=np.float64), mt.tensor(y, dtype=np.float64)).numpy(),
                                   theirs(torch.tensor(x), torch.tensor(y)).numpy(), rtol=1e-12)
    a, b = mt.zeros(3), mt.ones(3)
    ta, tb = torch.zeros(3), torch.ones(3)
    cases = [(lambda: F.smooth_l1_loss(a, b, beta=-1.0), lambda: torch.nn.functional.smooth_l1_loss(ta, tb, beta=-1.0)),
             (lambda: F.huber_loss(a, b, delta=0.0), lambda: torch.nn.functional.huber_loss(ta, tb, delta=0.0)),
             (lambda: F.smooth_l1_loss(a, b, reduction="avg"),
              lambda: torch.nn.functional.smooth_l1_loss(ta, tb, reduction="avg")),
             (lambda: nn.HuberLoss(reduction="avg"), lambda: torch.nn.HuberLoss(reduction="avg")(ta, tb))]
    for beta in (0.0, 1.0):   # (PyTorch broadcasts with a warning; minitorch refuses, as mse_loss does)
        with pytest.raises(ValueError, match="smooth_l1_loss: target of shape"):
            F.smooth_l1_loss(a, mt.ones(2, 3), beta=beta)
    for mine, theirs in cases:
        with pytest.raises(Exception) as their_error:
            theirs()
        with pytest.raises(type(their_error.value)):
            mine()


@pytest.mark.parametrize("kind, option", [("smooth_l1", 1.0), ("huber", 0.5)])
def test_on_the_device_as_on_the_cpu(kind, option, device):
    x, y = away_from_kinks((3, 4), [0.0, option])
    results = []
    for where in ("cpu", device):
        xt = mt.tensor(x, dtype=np.float64, device=where, requires_grad=True)
        loss = ours(kind, xt, mt.tensor(y, dtype=np.float64, device=where), option)
        loss.backward()
        assert loss.device == where and xt.grad.device == where
        results.append((loss.numpy(), xt.grad.numpy()))
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-12)
