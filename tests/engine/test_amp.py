"""Mixed precision in the engine: mt.autocast, mt.amp.GradScaler (against PyTorch's where torch is importable), the
fused ops at float16 inputs against float64 central differences, and TF32 as an opt-in on the GPU."""
import numpy as np
import pytest

import minitorch as mt
import minitorch.functional as F
from conftest import CUPY_STANDIN
from minitorch import backend, nn
from tests.finite_differences import vjp

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not mt.cuda_available(), reason="needs a GPU or "
                                                                 "the CuPy stand-in"))]


# ----- autocast -----
def test_autocast_runs_products_in_float16_and_leaves_float32_outside():
    mt.manual_seed(0)
    layer = nn.Linear(4, 3)
    x = mt.randn(5, 4)
    with mt.autocast("cpu"):
        assert mt.is_autocast_enabled() and mt.get_autocast_dtype() == np.float16
        y = layer(x)
        z = x @ x.T                                  # a product of two float32 activations: float16 too
        s = F.softmax(y, -1)                         # float16 in, float16 out (float32 sums inside)
        loss = F.cross_entropy(y, np.array([0, 1, 2, 0, 1]))   # float32 loss, as under PyTorch's autocast
        with mt.autocast("cpu", enabled=False):
            assert layer(x).dtype == np.float32 and not mt.is_autocast_enabled()
    assert (y.dtype, z.dtype, s.dtype, loss.dtype) == (np.float16, np.float16, np.float16, np.float32)
    assert layer(x).dtype == np.float32 and not mt.is_autocast_enabled()
    assert layer.weight.dtype == np.float32


def test_autocast_gradients_reach_the_float32_parameters_as_the_float32_ones():
    """A parameter's float16 copy is a recorded cast: its gradient comes back float32, close to the float32 run's."""
    mt.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    x = mt.randn(6, 8)
    expected = mt.grad((model(x) ** 2).sum(), list(model.parameters()))
    with mt.autocast("cpu"):
        loss = (model(x).float() ** 2).sum()
    loss.backward()
    for p, g in zip(model.parameters(), expected):
        assert p.grad.dtype == np.float32
        np.testing.assert_allclose(p.grad.numpy(), g.numpy(), rtol=2e-2, atol=2e-2 * np.abs(g.numpy()).max())


@pytest.mark.parametrize("device", DEVICES)
def test_a_flat_buffer_is_cast_once_a_block_and_settles_float32_gradients(device):
    """With FlatParameters every parameter's float16 tensor is a view of one copy of the buffer, made once per
    autocast block; the gradients reach .grad (float32, the flat buffer's slots) when the buffer is settled, and
    accumulate over two backwards as float32 ones do."""
    mt.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)).to(device)
    flat = nn.utils.FlatParameters(model)
    x = mt.randn(6, 8, device=device)
    expected = mt.grad((model(x) ** 2).sum(), list(model.parameters()))
    flat.zero_grad()
    with mt.autocast(device):
        halves = [model[0].weight, model[0].weight]
        first = model(x)
        copy = flat.buffers[0].half
        assert copy is not None and all(leaf.dtype == np.float16 for leaf in copy.leaves)
        data_before = copy.data
        second = model(x)
        assert copy.data is data_before and halves   # (the same copy: not cast again in the block)
    (first.float() ** 2).sum().backward()
    (second.float() ** 2).sum().backward()
    assert all(p.grad is None for p in model.parameters())        # in the float16 leaves until settled
    flat.settle()
    for p, g in zip(model.parameters(), expected):
        assert p.grad.dtype == np.float32 and p.grad.data.base is not None   # a view of the flat gradient buffer
        np.testing.assert_allclose(p.grad.numpy(), 2 * g.numpy(), rtol=2e-2, atol=2e-2 * np.abs(g.numpy()).max())


@pytest.mark.skipif(not CUPY_STANDIN, reason="counts launches, which only the CuPy stand-in does")
def test_a_flat_buffer_on_cuda_costs_one_cast_each_way():
    import cupy
    mt.manual_seed(0)
    model = nn.Sequential(*[nn.Linear(8, 8) for _ in range(6)]).to("cuda")
    flat = nn.utils.FlatParameters(model)
    x = mt.randn(4, 8, device="cuda")
    with cupy._standin.count_launches() as n, mt.autocast("cuda"):
        model(x)
    # 6 products with their bias, one copy of the float32 input in float16 and one of the whole buffer (no cast per
    # parameter)
    assert dict(n) == {"matmul": 6, "elementwise": 6, "copy": 2}, dict(n)
    with mt.autocast("cuda"):
        loss = model(x).sum()
    flat.zero_grad()
    loss.backward()
    with cupy._standin.count_launches() as n:
        flat.settle()
    assert dict(n) == {"copy": 2}, dict(n)   # the leaves' gradients joined (one kernel), then cast to float32


def test_autocast_refuses_a_dtype_it_does_not_have():
    with pytest.raises(ValueError, match="autocast: dtype must be float16"):
        mt.autocast("cpu", dtype=mt.float64)
    with pytest.raises(ValueError, match="device_type must be one of"):
        mt.autocast("tpu")


# ----- the fused ops at float16 inputs, against float64 central differences of NumPy forms -----
def np_softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def np_log_softmax(x):
    z = x - x.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def np_layer_norm(x, w, b):
    mu = x.mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + 1e-5) * w + b


TARGET = np.array([1, 0, 3, -100, 2, 1])


def np_cross_entropy(x, smoothing=0.1):
    valid = TARGET != -100
    q = (1 - smoothing) * (np.where(valid, TARGET, 0)[:, None] == np.arange(x.shape[1])) + smoothing / x.shape[1]
    return -(q * np_log_softmax(x)).sum(-1)[valid].sum() / valid.sum()


MASK = np.tril(np.ones((5, 5), dtype=bool))


def np_attention(q, k, v):
    s = np.where(MASK, q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]), -np.inf)
    return np_softmax(s) @ v


def np_lstm_cell(gates, c_prev):
    H = c_prev.shape[-1]
    sig = lambda a: 1 / (1 + np.exp(-a))   # noqa: E731
    i, f, g, o = sig(gates[:, :H]), sig(gates[:, H:2 * H]), np.tanh(gates[:, 2 * H:3 * H]), sig(gates[:, 3 * H:])
    c = f * c_prev + i * g
    return np.stack([o * np.tanh(c), c])


def mt_lstm_cell(gates, c_prev):
    h, c = F.lstm_cell(gates, c_prev)
    return mt.stack([h, c])


IDS = np.array([[0, 3, 3], [4, 1, 3]])   # (a repeated id: its rows' gradients add up)
rng = np.random.default_rng(0)
LONG_ROW = rng.standard_normal((2, 2048)) * 2.0
# (op on Tensors, NumPy form, inputs, output dtype): rows of 2048 too, where float16 sums would lose the small terms
# (a sum of 2048 terms near 1 has float16 spacing 1 or 2) or overflow (LayerNorm's squares of a row of spread 10 add
# up to 200,000, past float16's largest, 65,504)
HALF_CASES = {
    "softmax": (lambda x: F.softmax(x, -1), np_softmax, [rng.standard_normal((3, 7)) * 3], np.float16),
    "softmax, rows of 2048": (lambda x: F.softmax(x, -1), np_softmax, [LONG_ROW], np.float16),
    "log_softmax": (lambda x: F.log_softmax(x, -1), np_log_softmax, [rng.standard_normal((3, 7)) * 3], np.float16),
    "log_softmax, rows of 2048": (lambda x: F.log_softmax(x, -1), np_log_softmax, [LONG_ROW], np.float16),
    "layer_norm": (lambda x, w, b: F.layer_norm(x, (16,), w, b), np_layer_norm,
                   [rng.standard_normal((4, 16)) * 2, 1 + rng.standard_normal(16) * 0.1, rng.standard_normal(16)],
                   np.float16),
    "layer_norm, rows of 2048, spread 10": (lambda x, w, b: F.layer_norm(x, (2048,), w, b), np_layer_norm,
                                            [40 + 10 * rng.standard_normal((2, 2048)),
                                             1 + rng.standard_normal(2048) * 0.1, rng.standard_normal(2048)],
                                            np.float16),
    "cross_entropy": (lambda x: F.cross_entropy(x, TARGET, label_smoothing=0.1), np_cross_entropy,
                      [rng.standard_normal((6, 9)) * 3], np.float32),
    "attention": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, MASK), np_attention,
                  [rng.standard_normal((2, 5, 4)) for _ in range(3)], np.float16),
    "self_attention (packed)": (lambda qkv: F.self_attention(qkv, MASK),
                                lambda qkv: np_attention(qkv[0], qkv[1], qkv[2]),
                                [rng.standard_normal((3, 2, 5, 4))], np.float16),
    "cross_attention (packed)": (lambda q, kv: F.cross_attention(q, kv, MASK),
                                 lambda q, kv: np_attention(q, kv[0], kv[1]),
                                 [rng.standard_normal((2, 5, 4)), rng.standard_normal((2, 2, 5, 4))], np.float16),
    "lstm_cell": (mt_lstm_cell, np_lstm_cell, [rng.standard_normal((3, 12)) * 2, rng.standard_normal((3, 3))],
                  np.float16),
    "bias_relu": (F.bias_relu, lambda a, b: np.maximum(a + b, 0), [rng.standard_normal((3, 6)),
                                                                  rng.standard_normal(6)], np.float16),
    "embedding": (lambda w: F.embedding(IDS, w), lambda w: w[IDS], [rng.standard_normal((5, 3))], np.float16),
    "gelu": (F.gelu, lambda a: 0.5 * a * (1 + np.tanh(0.7978845608028654 * (a + 0.044715 * a ** 3))),
             [rng.standard_normal((3, 6)) * 2], np.float16),
}
# float16's tolerance: its spacing is 2^-11 of a value (4.9e-4); the inputs, the output and the saved arrays are each
# rounded once, so a gradient is off by a few of those, relative to the largest entry
HALF_RTOL = 1e-2


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", list(HALF_CASES))
def test_fused_ops_at_float16_inputs_against_float64_differences(name, device):
    fn, f_np, arrays, out_dtype = HALF_CASES[name]
    halves = [a.astype(np.float16) for a in arrays]            # the inputs the op sees, exactly, in float64 below
    leaves = [mt.tensor(a, dtype=mt.float16, device=device, requires_grad=True) for a in halves]
    out = fn(*leaves)
    assert out.dtype == out_dtype
    w = np.random.default_rng(1).standard_normal(out.shape).astype(out_dtype)
    out.backward(mt.tensor(w, dtype=out_dtype, device=device))
    exact = [a.astype(np.float64) for a in halves]
    expected_out = np.asarray(f_np(*exact))
    np.testing.assert_allclose(out.numpy().astype(np.float64), expected_out, rtol=HALF_RTOL,
                               atol=HALF_RTOL * np.abs(expected_out).max())
    for leaf, ref in zip(leaves, vjp(f_np, exact, w.astype(np.float64))):
        assert leaf.grad.dtype == np.float16
        np.testing.assert_allclose(leaf.grad.numpy().astype(np.float64), ref, rtol=HALF_RTOL,
                                   atol=HALF_RTOL * np.abs(ref).max(), err_msg=name)


# ----- GradScaler -----
def scaler_and_model(init_scale=8.0, growth_interval=3):
    mt.manual_seed(0)
    model = nn.Linear(3, 2)
    optimizer = mt.optim.SGD(model.parameters(), lr=0.1)
    return model, optimizer, mt.amp.GradScaler("cpu", init_scale=init_scale, growth_interval=growth_interval)


def set_grads(model, bad):
    for p in model.parameters():
        g = np.ones(p.shape, dtype=np.float32)
        if bad:
            g.flat[0] = np.inf
        p.grad = mt.tensor(g)


# found_inf of each step: growth after 3 clean steps in a row, a backoff on each overflow
OVERFLOWS = [False, True, False, False, False, False, True, True, False, False, False, False, False, False]


def test_the_scaler_grows_backs_off_and_skips_as_gradscaler_does():
    model, optimizer, scaler = scaler_and_model()
    scales, trackers = [], []
    for bad in OVERFLOWS:
        before = model.weight.numpy().copy()
        set_grads(model, bad)
        scaler.step(optimizer)
        scaler.update()
        assert np.array_equal(model.weight.numpy(), before) == bad   # skipped exactly on an overflow
        scales.append(scaler.get_scale())
        trackers.append(scaler.state_dict()["_growth_tracker"])
    assert scales == [8, 4, 4, 4, 8, 8, 4, 2, 2, 2, 4, 4, 4, 8]
    assert trackers == [1, 0, 1, 2, 0, 1, 0, 0, 1, 2, 0, 1, 2, 0]


def test_the_scaler_matches_pytorchs_gradscaler_step_by_step():
    torch = pytest.importorskip("torch")
    try:
        theirs = torch.amp.GradScaler("cpu", init_scale=8.0, growth_interval=3)
    except (AttributeError, TypeError, RuntimeError) as e:   # CPU scaling came with torch 2.3
        pytest.skip(f"this PyTorch has no torch.amp.GradScaler('cpu'): {e}")
    model, optimizer, ours = scaler_and_model()
    t_model = torch.nn.Linear(3, 2)
    with torch.no_grad():
        t_model.weight.copy_(torch.tensor(model.weight.numpy()))
        t_model.bias.copy_(torch.tensor(model.bias.numpy()))
    t_optimizer = torch.optim.SGD(t_model.parameters(), lr=0.1)
    theirs.scale(torch.ones(()))   # (its scale is made at the first scale())
    for bad in OVERFLOWS:
        set_grads(model, bad)
        for p in t_model.parameters():
            g = torch.ones_like(p)
            if bad:
                g.view(-1)[0] = float("inf")
            p.grad = g
        ours.step(optimizer)
        theirs.step(t_optimizer)
        ours.update()
        theirs.update()
        assert ours.get_scale() == theirs.get_scale()
        assert ours.state_dict() == theirs.state_dict()
        np.testing.assert_allclose(model.weight.numpy(), t_model.weight.detach().numpy(), rtol=1e-6)


def test_the_scaler_scales_unscales_and_round_trips_its_state():
    model, optimizer, scaler = scaler_and_model(init_scale=1024.0)
    loss = scaler.scale((model(mt.ones(1, 3)) ** 2).sum())
    loss.backward()
    expected = model.weight.grad.numpy() / 1024
    scaler.unscale_(optimizer)
    np.testing.assert_array_equal(model.weight.grad.numpy(), expected)
    with pytest.raises(RuntimeError, match="unscale_\\(\\) has already been called"):
        scaler.unscale_(optimizer)
    scaler.step(optimizer)
    with pytest.raises(RuntimeError, match="step\\(\\) has already been called"):
        scaler.step(optimizer)
    scaler.update()
    with pytest.raises(AssertionError, match="No inf checks"):
        scaler.update()
    other = mt.amp.GradScaler("cpu")
    other.load_state_dict(scaler.state_dict())
    assert other.state_dict() == scaler.state_dict() == {"scale": 1024.0, "growth_factor": 2.0,
                                                         "backoff_factor": 0.5, "growth_interval": 3,
                                                         "_growth_tracker": 1}
    with pytest.raises(RuntimeError, match="state dict is empty"):
        other.load_state_dict({})
    disabled = mt.amp.GradScaler("cpu", enabled=False)
    assert disabled.state_dict() == {} and disabled.get_scale() == 1.0 and disabled.scale(loss) is loss


@pytest.mark.skipif(not CUPY_STANDIN, reason="counts host reads, which only the CuPy stand-in does")
def test_the_scaler_finds_an_overflow_on_cuda_with_one_read():
    """step() reads found_inf once (a reduction on the device, then one read); told it by the caller, none."""
    import cupy
    mt.manual_seed(0)
    model = nn.Linear(3, 2).to("cuda")
    optimizer = mt.optim.Adam(nn.utils.FlatParameters(model))
    scaler = mt.amp.GradScaler("cuda", init_scale=4.0)
    for bad, told in ((True, False), (False, False), (True, True)):
        with mt.autocast("cuda"), np.errstate(all="ignore"):
            loss = model(mt.ones(2, 3, device="cuda")).float().sum() * (np.inf if bad else 1.0)
        optimizer.zero_grad()
        with np.errstate(all="ignore"):
            scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        if told:
            scaler.set_found_inf(optimizer, bad)
        syncs = len(cupy._standin.SYNCS)
        before = model.weight.numpy()
        scaler.step(optimizer)
        assert len(cupy._standin.SYNCS) - syncs - 1 == (0 if told else 1)   # (- 1: the numpy() below)
        assert np.array_equal(model.weight.numpy(), before) == bad
        scale = scaler.get_scale()
        scaler.update()
        assert scaler.get_scale() == (scale / 2 if bad else scale)


# ----- TF32 -----
@pytest.mark.skipif(not CUPY_STANDIN, reason="the stand-in rounds to TF32; a GPU's TF32 is tested by gpu_check.sh")
def test_tf32_is_an_opt_in_for_float32_products(monkeypatch):
    import cupy
    monkeypatch.setattr(cupy._core, "_compute_types", {})
    a, b = (mt.tensor(np.random.default_rng(i).standard_normal((32, 32)), device="cuda") for i in range(2))
    assert not mt.backends.cuda.matmul.allow_tf32
    exact = (a @ b).numpy()
    np.testing.assert_allclose(exact, a.numpy() @ b.numpy(), rtol=1e-5, atol=1e-5)
    mt.backends.cuda.matmul.allow_tf32 = True
    try:
        assert mt.backends.cuda.matmul.allow_tf32 and backend.tf32_enabled()
        tf32 = (a @ b).numpy()
    finally:
        mt.backends.cuda.matmul.allow_tf32 = False
    error = np.abs(tf32 - exact).max()
    assert 1e-4 < error < 1e-1, error   # operands rounded to a 10-bit mantissa: off by about 2^-11 of each term
    assert not backend.tf32_enabled()
