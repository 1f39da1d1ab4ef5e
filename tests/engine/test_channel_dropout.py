"""F.dropout1d / F.dropout2d and nn.Dropout1d / nn.Dropout2d: whole channels zeroed, the others scaled by 1/(1-p),
identity in eval mode; the gradient through the same mask; PyTorch's shapes, dtypes, errors and warnings."""
import warnings

import numpy as np
import pytest

import minitorch as mt
import minitorch.functional as F
from minitorch import nn

RNG = np.random.default_rng(5)


def channel_values(out, channels):
    """out reshaped to (channels..., rest): each row one channel's values."""
    return out.reshape(int(np.prod(out.shape[:channels])), -1)


@pytest.mark.parametrize("fn, shape, channels", [(F.dropout2d, (50, 40, 3, 2), 2), (F.dropout1d, (50, 40, 5), 2),
                                                 (F.dropout1d, (400, 5), 1)])
@pytest.mark.parametrize("p", [0.2, 0.5])
def test_whole_channels_are_zeroed_or_scaled(fn, shape, channels, p, device):
    x = mt.ones(shape, dtype=mt.float64, device=device)
    out = fn(x, p)
    assert out.shape == shape and out.dtype == np.float64 and out.device == device
    rows = channel_values(out.numpy(), channels)
    zeroed = (rows == 0).all(axis=1)
    kept = np.isclose(rows, 1 / (1 - p), rtol=1e-12).all(axis=1)
    assert (zeroed | kept).all()   # each channel entirely one or the other
    n = len(rows)   # 2000 or 400 channels: the share dropped within 5 standard deviations of p
    assert abs(zeroed.mean() - p) < 5 * np.sqrt(p * (1 - p) / n)


@pytest.mark.parametrize("fn, shape", [(F.dropout2d, (3, 4, 2, 2)), (F.dropout1d, (3, 4, 5)),
                                       (F.dropout1d, (12, 5))])
def test_the_gradient_goes_through_the_forwards_mask(fn, shape, device):
    x = mt.tensor(RNG.standard_normal(shape) + 3, dtype=mt.float64, device=device, requires_grad=True)
    w = RNG.standard_normal(shape)
    mt.manual_seed(0)
    out = fn(x, 0.4)
    (out * mt.tensor(w, dtype=mt.float64, device=device)).sum().backward()
    mt.manual_seed(0)
    mask = fn(mt.ones(shape, dtype=mt.float64, device=device), 0.4).numpy()   # the same draw, on ones
    np.testing.assert_allclose(out.numpy(), x.detach().numpy() * mask, rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), w * mask, rtol=1e-12)
    assert (mask == 0).any() and (mask != 0).any()


def test_second_order_of_a_channel_dropout_is_zero_as_it_is_linear():
    x = mt.tensor(RNG.standard_normal((2, 3, 2, 2)), dtype=mt.float64, requires_grad=True)
    out = F.dropout2d(x, 0.5)
    g, = mt.autograd.grad((out * out).sum(), [x], create_graph=True)
    h, = mt.autograd.grad(g.sum(), [x])
    mask = out.detach().numpy() / x.detach().numpy()
    np.testing.assert_allclose(h.numpy(), 2 * mask * mask, rtol=1e-12)   # d/dx of 2 m^2 x


def test_eval_mode_p_zero_and_p_one():
    x = mt.randn(2, 3, 4, 4)
    for cls in (nn.Dropout1d, nn.Dropout2d):
        m = cls(0.5)
        m.eval()
        y = x.reshape(2, 3, 16) if cls is nn.Dropout1d else x
        assert m(y) is y
    assert F.dropout2d(x, 0.0) is x and F.dropout2d(x, 0.7, training=False) is x
    assert (F.dropout2d(x, 1.0).numpy() == 0).all() and (F.dropout1d(x[0], 1.0).numpy() == 0).all()


def test_in_place_writes_into_the_input():
    x = mt.ones(4, 6, 3)
    out = F.dropout1d(x, 0.5, inplace=True)
    assert out is x and set(np.unique(x.numpy())) <= {0.0, 2.0}


def test_shapes_dtypes_errors_and_warnings_as_torch():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed: the comparison with it is skipped")
    tf = torch.nn.functional
    for shape in [(4,), (3, 5), (2, 3, 5), (2, 3, 4, 5), (2, 3, 2, 2, 2)]:
        for ours, theirs in [(F.dropout1d, tf.dropout1d), (F.dropout2d, tf.dropout2d)]:
            outcome = []
            for fn, x in [(theirs, torch.ones(shape, dtype=torch.float64)), (ours, mt.ones(shape, dtype=mt.float64))]:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    try:
                        out = fn(x, 0.5)
                        outcome.append(("ok", tuple(out.shape), str(out.dtype).split(".")[-1], len(caught)))
                    except Exception as e:   # noqa: BLE001 (the type is what is compared)
                        outcome.append((type(e).__name__,))
            assert outcome[0] == outcome[1], (ours.__name__, shape)
    for p in (-0.1, 1.5):
        for make in (lambda m: m.Dropout1d(p), lambda m: m.Dropout2d(p)):
            with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
                make(torch.nn)
            with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
                make(nn)
    assert repr(nn.Dropout2d(0.3)) == repr(torch.nn.Dropout2d(0.3))
    assert repr(nn.Dropout1d()) == repr(torch.nn.Dropout1d())
