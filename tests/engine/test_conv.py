"""Conv2d, max and average pooling (minitorch/ops/conv.py, as im2col): values against a direct NumPy loop written here,
gradients against central differences of that loop in float64, gradcheck and gradgradcheck, torch.nn with copied
weights to 1e-10 where PyTorch is installed, and the "cuda" path (the CuPy stand-in without a GPU) against the CPU."""
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import minitorch as mt
import minitorch.nn.functional as F
from conftest import CUPY_STANDIN
from finite_differences import vjp
from minitorch import nn

try:
    import torch
except ImportError:
    torch = None
needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed: nothing to compare with")


def windows_np(x, k, stride, padding, dilation, pad_value=0.0):
    """{(y, x): the window (N, C, kh, kw) of output place (y, x)}, by the definition (no im2col)."""
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = k, stride, padding, dilation
    padded = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)), constant_values=pad_value)
    Ho = (padded.shape[2] - dh * (kh - 1) - 1) // sh + 1
    Wo = (padded.shape[3] - dw * (kw - 1) - 1) // sw + 1
    return {(y, z): padded[:, :, y * sh:y * sh + dh * (kh - 1) + 1:dh, z * sw:z * sw + dw * (kw - 1) + 1:dw]
            for y in range(Ho) for z in range(Wo)}, (Ho, Wo)


def conv2d_np(x, w, b, stride, padding, dilation):
    wins, (Ho, Wo) = windows_np(x, w.shape[2:], stride, padding, dilation)
    out = np.zeros((x.shape[0], w.shape[0], Ho, Wo))
    for (y, z), patch in wins.items():
        out[:, :, y, z] = np.einsum("nckl,ockl->no", patch, w) + b
    return out


def pool_np(x, k, stride, padding, dilation, reduce, pad_value):
    wins, (Ho, Wo) = windows_np(x, k, stride, padding, dilation, pad_value)
    out = np.zeros(x.shape[:2] + (Ho, Wo))
    for (y, z), patch in wins.items():
        out[:, :, y, z] = reduce(patch, axis=(2, 3))
    return out


@st.composite
def geometries(draw):
    k = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    stride, dilation = (draw(st.integers(1, 2)), draw(st.integers(1, 2))), (draw(st.integers(1, 2)),) * 2
    padding = (draw(st.integers(0, 1)), draw(st.integers(0, 1)))
    size = (draw(st.integers(3, 6)), draw(st.integers(3, 6)))
    assume(all(size[i] + 2 * padding[i] >= dilation[i] * (k[i] - 1) + 1 for i in range(2)))
    return k, stride, padding, dilation, size


@settings(max_examples=15)
@given(geometry=geometries(), channels=st.integers(1, 2), out_channels=st.integers(1, 2), seed=st.integers(0, 99))
def test_conv2d_value_and_gradients_match_central_differences(geometry, channels, out_channels, seed):
    k, stride, padding, dilation, size = geometry
    rng = np.random.default_rng(seed)
    x, w, b = rng.standard_normal((2, channels) + size), rng.standard_normal((out_channels, channels) + k), \
        rng.standard_normal(out_channels)
    X, W, B = (mt.tensor(a, dtype=np.float64, requires_grad=True) for a in (x, w, b))
    out = F.conv2d(X, W, B, stride, padding, dilation)
    expected = conv2d_np(x, w, b, stride, padding, dilation)
    np.testing.assert_allclose(out.detach().numpy(), expected, rtol=1e-12, atol=1e-12)
    weights = rng.standard_normal(expected.shape)
    (out * mt.tensor(weights, dtype=np.float64)).sum().backward()
    numeric = vjp(lambda *a: conv2d_np(*a, stride, padding, dilation), [x, w, b], weights)
    for leaf, g in zip((X, W, B), numeric):
        np.testing.assert_allclose(leaf.grad.numpy(), g, rtol=1e-6, atol=1e-7)


POOLS = {"max": (F.max_pool2d, np.max, -np.inf), "avg": (F.avg_pool2d, np.mean, 0.0)}


@settings(max_examples=15)
@given(kind=st.sampled_from(sorted(POOLS)), geometry=geometries(), seed=st.integers(0, 99))
def test_pooling_value_and_gradient_match_central_differences(kind, geometry, seed):
    k, stride, padding, dilation, size = geometry
    assume(2 * padding[0] <= k[0] and 2 * padding[1] <= k[1])
    if kind == "avg":
        dilation = (1, 1)
    pool, reduce, pad_value = POOLS[kind]
    x = np.random.default_rng(seed).permutation(2 * 2 * size[0] * size[1]).reshape((2, 2) + size) / 7.0  # no ties
    X = mt.tensor(x, dtype=np.float64, requires_grad=True)
    out = pool(X, k, stride, padding, dilation) if kind == "max" else pool(X, k, stride, padding)
    expected = pool_np(x, k, stride, padding, dilation, reduce, pad_value)
    np.testing.assert_allclose(out.detach().numpy(), expected, rtol=1e-12)
    weights = np.random.default_rng(seed + 1).standard_normal(expected.shape)
    (out * mt.tensor(weights, dtype=np.float64)).sum().backward()
    numeric, = vjp(lambda a: pool_np(a, k, stride, padding, dilation, reduce, pad_value), [x], weights, eps=1e-4)
    np.testing.assert_allclose(X.grad.numpy(), numeric, rtol=1e-6, atol=1e-7)


def test_overlapping_windows_sum_their_gradients():
    """A 3x3 input, 2x2 kernel of ones, stride 1: the centre is read by all four windows, so its gradient is 4."""
    x = mt.ones(1, 1, 3, 3, dtype=np.float64, requires_grad=True)
    F.conv2d(x, mt.ones(1, 1, 2, 2, dtype=np.float64)).sum().backward()
    assert x.grad.numpy()[0, 0].tolist() == [[1, 2, 1], [2, 4, 2], [1, 2, 1]]


@pytest.mark.parametrize("make", [
    lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1, dilation=1),
    lambda x, w, b: F.conv2d(x, w, None, stride=1, padding=(1, 0), dilation=2),
    lambda x, w, b: F.max_pool2d(F.conv2d(x, w, b), 2, stride=1),
    lambda x, w, b: F.avg_pool2d(F.conv2d(x, w, b, padding=1), 3, stride=2, padding=1),
])
def test_gradcheck_and_gradgradcheck(make):
    rng = np.random.default_rng(0)
    x, w, b = (mt.tensor(rng.standard_normal(s), dtype=np.float64, requires_grad=True)
               for s in ((1, 2, 5, 5), (2, 2, 2, 2), (2,)))
    assert mt.gradcheck(make, [x, w, b])
    assert mt.gradgradcheck(make, [x, w, b], atol=1e-5, rtol=1e-4)


@needs_torch
@pytest.mark.parametrize("options", [dict(), dict(stride=2, padding=1), dict(stride=(1, 2), padding=(2, 1),
                                                                            dilation=(2, 1)), dict(bias=False)])
def test_conv2d_module_matches_torch_with_copied_weights(options):
    rng = np.random.default_rng(1)
    ours, theirs = nn.Conv2d(3, 4, (3, 2), dtype=np.float64, **options), torch.nn.Conv2d(3, 4, (3, 2), **options)
    theirs = theirs.double()
    with torch.no_grad():
        theirs.weight.copy_(torch.from_numpy(ours.weight.detach().numpy()))
        if ours.bias is not None:
            theirs.bias.copy_(torch.from_numpy(ours.bias.detach().numpy()))
    x = rng.standard_normal((2, 3, 7, 6))
    X, tX = mt.tensor(x, dtype=np.float64, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, t_out = ours(X), theirs(tX)
    weights = rng.standard_normal(tuple(t_out.shape))
    (out * mt.tensor(weights, dtype=np.float64)).sum().backward()
    (t_out * torch.from_numpy(weights)).sum().backward()
    np.testing.assert_allclose(out.detach().numpy(), t_out.detach().numpy(), rtol=0, atol=1e-10)
    pairs = [(X.grad, tX.grad), (ours.weight.grad, theirs.weight.grad)]
    pairs += [(ours.bias.grad, theirs.bias.grad)] if ours.bias is not None else []
    for g, tg in pairs:
        np.testing.assert_allclose(g.numpy(), tg.numpy(), rtol=0, atol=1e-10)


@needs_torch
@pytest.mark.parametrize("ours, theirs, options", [
    (nn.MaxPool2d, torch and torch.nn.MaxPool2d, dict(kernel_size=2)),
    (nn.MaxPool2d, torch and torch.nn.MaxPool2d, dict(kernel_size=3, stride=2, padding=1)),
    (nn.MaxPool2d, torch and torch.nn.MaxPool2d, dict(kernel_size=2, stride=1, dilation=2)),
    (nn.AvgPool2d, torch and torch.nn.AvgPool2d, dict(kernel_size=3, stride=2, padding=1)),
])
def test_pooling_modules_match_torch(ours, theirs, options):
    x = np.random.default_rng(2).standard_normal((2, 3, 7, 8))
    X, tX = mt.tensor(x, dtype=np.float64, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, t_out = ours(**options)(X), theirs(**options)(tX)
    (out * out).sum().backward()
    (t_out * t_out).sum().backward()
    np.testing.assert_allclose(out.detach().numpy(), t_out.detach().numpy(), rtol=0, atol=1e-10)
    np.testing.assert_allclose(X.grad.numpy(), tX.grad.numpy(), rtol=0, atol=1e-10)


def lenet(device):
    mt.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(4, 6, 3), nn.ReLU(),
                          nn.AvgPool2d(2), nn.Flatten(), nn.Linear(6, 3))
    return model.to(device)


def test_the_cuda_path_runs_the_same_code_and_agrees_with_the_cpu(device):
    x = np.random.default_rng(3).standard_normal((2, 1, 8, 8)).astype(np.float32)
    results = []
    for where in ("cpu", device):
        model = lenet(where)
        X = mt.tensor(x, device=where, requires_grad=True)
        loss = model(X).square().sum()
        loss.backward()
        assert X.grad.device == where and model[0].weight.grad.device == where
        results.append([loss.detach().numpy(), X.grad.numpy(), model[0].weight.grad.numpy()])
    for ours, cpu in zip(results[1], results[0]):
        np.testing.assert_allclose(ours, cpu, rtol=1e-5, atol=1e-6)


def test_flatten_from_dim_one_and_clear_errors():
    x = mt.zeros(2, 3, 4, 5)
    assert mt.flatten(x, 1).shape == (2, 60)
    with pytest.raises(ValueError, match="3 channels, the weight expects 2"):
        F.conv2d(x, mt.zeros(1, 2, 3, 3))
    with pytest.raises(ValueError, match="smaller than the kernel"):
        F.conv2d(x, mt.zeros(1, 3, 5, 5))
    with pytest.raises(NotImplementedError, match="groups=1"):
        nn.Conv2d(3, 6, 3, groups=3)
    with pytest.raises(ValueError, match="kernel_size"):
        nn.MaxPool2d((2, 2, 2))(x)
    assert F.conv2d(mt.zeros(3, 4, 5), mt.zeros(2, 3, 3, 3)).shape == (2, 2, 3)   # unbatched, as PyTorch
    with pytest.raises(NotImplementedError, match="conv2d: groups=2"):
        F.conv2d(x, mt.zeros(1, 3, 3, 3), groups=2)


def test_convolution_and_pooling_refuse_integers_and_mixed_dtypes():
    ints = mt.ones(1, 1, 4, 4, dtype=mt.long)
    for op in (lambda t: F.conv2d(t, mt.ones(1, 1, 2, 2, dtype=mt.long)), lambda t: F.max_pool2d(t, 2, padding=1),
               lambda t: F.avg_pool2d(t, 2)):
        with pytest.raises(TypeError, match="needs a floating-point tensor"):
            op(ints)
    x = mt.ones(1, 1, 4, 4)
    with pytest.raises(RuntimeError, match=r"Input type \(float32\) and weight type \(float64\) should be the same"):
        F.conv2d(x, mt.ones(1, 1, 2, 2, dtype=mt.double))
    with pytest.raises(RuntimeError, match=r"Input type \(float32\) and bias type \(float64\) should be the same"):
        F.conv2d(x, mt.ones(1, 1, 2, 2), mt.zeros(1, dtype=mt.double))
    assert F.conv2d(x, mt.ones(1, 1, 2, 2), mt.ones(1)).tolist() == np.full((1, 1, 3, 3), 5.0).tolist()


def test_the_lenet_step_time_example_prints_a_row_per_batch_size(device, capsys):
    import runpy
    from pathlib import Path
    script = runpy.run_path(str(Path(__file__).resolve().parents[2] / "examples" / "lenet_step_time.py"))
    script["main"](["--device", device, "--steps", "1"])
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("batch")]
    assert [row.split(":")[0] for row in rows] == ["batch   4", "batch  16", "batch  64"]
    assert all("ms a step" in row and "images/s" in row for row in rows)


@pytest.mark.skipif(not CUPY_STANDIN or not mt.cuda_available(), reason="counts launches and host waits, which only "
                    "the CuPy stand-in records")
def test_on_the_gpu_a_conv_step_waits_for_nothing_and_its_launches_do_not_grow_with_the_image():
    import cupy
    counts = []
    for size in (8, 16):
        model = lenet("cuda")
        x = mt.randn(2, 1, size, size, device="cuda", requires_grad=True)
        del cupy._standin.SYNCS[:]
        with cupy._standin.count_launches() as counted:
            F.conv2d(F.max_pool2d(model[0](x), 2), model[3].weight).square().sum().backward()
        assert cupy._standin.SYNCS == [], cupy._standin.SYNCS   # no host wait inside a step
        counts.append(counted.total)
    assert counts[0] == counts[1] and counts[0] > 0   # kh * kw slice copies, not one per pixel
    print(f"\nlaunches for a conv + max_pool + conv forward and backward: {counts[0]}")
