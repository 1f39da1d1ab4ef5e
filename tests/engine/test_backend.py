"""The array backend: devices and their errors, scatter-add, random generators, and every op on the GPU (where one
is usable; those tests skip with the reason otherwise)."""
import numpy as np
import pytest
from conftest import requires_gpu
from hypothesis import given, settings
from hypothesis import strategies as st
from op_table import OPS

import minitorch as mt
import minitorch.functional as F
from minitorch import backend, nn, optim

# ----- device="cuda" without CuPy or a GPU -----
@pytest.mark.parametrize("make", [
    lambda: mt.zeros(2, device="cuda"),
    lambda: mt.randn(2, device="cuda"),
    lambda: mt.tensor([1.0], device="cuda"),
    lambda: mt.arange(3, device="cuda"),
    lambda: mt.tensor([1.0]).to("cuda"),
    lambda: mt.tensor([1.0]).cuda(),
    lambda: mt.tensor([1.0]).to("cuda:0"),
    lambda: nn.Linear(2, 2).to("cuda"),
])
def test_cuda_without_a_gpu_says_what_to_install(make, no_cupy):
    with pytest.raises(RuntimeError, match=r"device='cuda' is not available: .*(pip install|no usable GPU|no GPU)"):
        make()


def test_loading_onto_cuda_without_a_gpu_is_a_clear_error(tmp_path, no_cupy):
    mt.save({"w": mt.ones(2)}, tmp_path / "s.npz")
    with pytest.raises(RuntimeError, match="device='cuda' is not available"):
        mt.load(tmp_path / "s.npz", device="cuda")


def test_cuda_available_matches_what_device_creation_does():
    if mt.cuda_available():
        assert mt.zeros(1, device="cuda").device == "cuda"
    else:
        with pytest.raises(RuntimeError):
            mt.zeros(1, device="cuda")


def test_unknown_device_name():
    for name in ("gpu", "cpu:0", "cuda:x", "cuda:-1"):
        with pytest.raises(ValueError, match=f"unknown device '{name}'"):
            backend.check_device(name)
    assert backend.check_device("cpu") == "cpu"


@requires_gpu
def test_cuda_n_is_the_current_gpu_or_refused():
    """cuda:N used to become the current GPU whatever N was; now N must be the current GPU's index."""
    current = __import__("cupy").cuda.Device().id
    assert backend.check_device(f"cuda:{current}") == "cuda" and mt.zeros(1, device=f"cuda:{current}").device == "cuda"
    with pytest.raises(ValueError, match=f"device 'cuda:{current + 1}': minitorch runs on one GPU, this process's "
                                         f"current one \\(cuda:{current}\\); to use GPU {current + 1}, start the "
                                         f"process with CUDA_VISIBLE_DEVICES={current + 1}"):
        mt.zeros(1, device=f"cuda:{current + 1}")


# ----- tensors on two devices in one op -----
class _PretendGpuArray(np.ndarray):
    """A NumPy array that the patched backend reports as living on the GPU (so the check runs without one)."""


@pytest.mark.parametrize("op", [lambda a, b: a + b, lambda a, b: a @ b, lambda a, b: mt.cat([a, b]),
                                lambda a, b: mt.where(a > 0, a, b), lambda a, b: mt.where(b > 0, a, b),
                                lambda a, b: b.masked_fill(a > 0, 0.0), lambda a, b: b[a > 0]])
def test_tensors_on_two_devices_raise_a_clear_error(monkeypatch, op):
    monkeypatch.setattr(backend, "device_of", lambda a: "cuda" if isinstance(a, _PretendGpuArray) else "cpu")
    on_gpu = mt.Tensor._make(np.ones(3).view(_PretendGpuArray))
    assert on_gpu.device == "cuda"
    with pytest.raises(RuntimeError, match=r"(different devices \((cuda and cpu|cpu and cuda)\)|on cuda for a tensor "
                                           r"on cpu).*\.to\(device\)"):
        op(on_gpu, mt.ones(3, dtype=np.float64))


@requires_gpu
@pytest.mark.gpu
def test_real_gpu_and_cpu_tensors_in_one_op_raise():
    with pytest.raises(RuntimeError, match="different devices"):
        mt.ones(3, device="cuda") + mt.ones(3)


# ----- on every device -----
def test_tensors_move_between_devices(device):
    x = mt.tensor([[1.0, 2.0], [3.0, 4.0]], device=device, requires_grad=True)
    assert x.device == device and backend.device_of(x.data) == device
    assert isinstance(x.numpy(), np.ndarray)
    y = x.to("cpu")
    assert y.device == "cpu"
    (y * y).sum().backward()  # the gradient travels back to the device
    assert x.grad.device == device
    np.testing.assert_allclose(x.grad.numpy(), 2 * x.numpy())


def test_scatter_add_adds_repeated_indices(device):
    xp = backend.xp_of_device(device)
    target = xp.zeros((4, 2))
    ids = backend.to_device(np.array([1, 3, 1, 1, 0]), device)
    values = backend.to_device(np.arange(10, dtype=np.float64).reshape(5, 2), device)
    backend.scatter_add(target, ids, values)
    expected = np.zeros((4, 2))
    for i, row in zip([1, 3, 1, 1, 0], np.arange(10.0).reshape(5, 2)):
        expected[i] += row
    np.testing.assert_array_equal(backend.to_numpy(target), expected)


def test_seeded_generators_repeat(device):
    mt.manual_seed(7)
    a = mt.randn(6, device=device).numpy()
    d1 = F.dropout(mt.ones(100, device=device), 0.5).numpy()
    mt.manual_seed(7)
    b = mt.randn(6, device=device).numpy()
    d2 = F.dropout(mt.ones(100, device=device), 0.5).numpy()
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(d1, d2)


def test_generator_state_round_trip_through_a_save_file(device, tmp_path):
    mt.manual_seed(1)
    mt.randn(3, device=device)
    mt.save({"rng": backend.get_rng_state()}, tmp_path / "rng.npz")
    a, mask = mt.randn(4, device=device).numpy(), F.dropout(mt.ones(64, device=device), 0.5).numpy()
    mt.manual_seed(2)  # a new process would start from another stream
    assert backend.set_rng_state(mt.load(tmp_path / "rng.npz")["rng"], device)
    np.testing.assert_array_equal(mt.randn(4, device=device).numpy(), a)
    np.testing.assert_array_equal(F.dropout(mt.ones(64, device=device), 0.5).numpy(), mask)


def test_a_state_without_the_devices_generator_says_so(device):
    mt.manual_seed(1)
    cpu_only = {"cpu": backend.get_rng_state()["cpu"]}
    assert backend.set_rng_state(cpu_only, device) == (device == "cpu")


def test_a_training_step_on_the_device(device):
    mt.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 5), nn.GELU(), nn.Linear(5, 2)).to(device)
    opt = optim.AdamW(model.parameters(), lr=1e-2)
    x = mt.randn(8, 3, device=device)
    y = mt.randn(8, 2, device=device)
    losses = []
    for _ in range(20):
        loss = ((model(x) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert all(p.device == device for p in model.parameters())
    assert losses[-1] < losses[0]


# ----- every op on the GPU gives what the CPU gives -----
def _run(f_mt, inputs, device):
    """f_mt forward on `device`, then backward of a fixed random w: (value, [gradient of each input]) as NumPy."""
    leaves = [mt.tensor(a, dtype=np.float64, device=device, requires_grad=True) for a in inputs]
    out = f_mt(*leaves)
    assert out.device == device
    out.backward(mt.tensor(np.random.default_rng(2).standard_normal(out.shape), dtype=np.float64, device=device))
    return out.numpy(), [np.zeros(t.shape) if t.grad is None else t.grad.numpy() for t in leaves]


def _same_on_both_devices(f_mt, inputs):
    (value_cpu, grads_cpu), (value_gpu, grads_gpu) = _run(f_mt, inputs, "cpu"), _run(f_mt, inputs, "cuda")
    np.testing.assert_allclose(value_gpu, value_cpu, rtol=1e-10, atol=1e-12)
    for g_gpu, g_cpu in zip(grads_gpu, grads_cpu):
        np.testing.assert_allclose(g_gpu, g_cpu, rtol=1e-10, atol=1e-12)


@requires_gpu
@pytest.mark.gpu
@pytest.mark.parametrize("name", list(OPS))
@settings(max_examples=3, derandomize=True)
@given(data=st.data())
def test_op_on_the_gpu_matches_the_cpu(name, data):
    """Each entry of tests/op_table.py, forward and backward, on "cuda" against the CPU."""
    op = OPS[name]
    inputs, options = data.draw(op.cases)
    _same_on_both_devices(lambda *xs: op.f_mt(*xs, **options), inputs)


def _fused_ops(device):
    """The fused ops (tests/engine/test_fused.py checks their gradients): name -> (fn(*tensors), input shapes)."""
    mask = mt.tensor(np.random.default_rng(0).random((3, 4)) > 0.5, device=device)
    return {
        "F.softmax": (lambda a: F.softmax(a, dim=-1), [(3, 4)]),
        "F.log_softmax": (lambda a: F.log_softmax(a, dim=0), [(3, 4)]),
        "F.layer_norm": (lambda x, w, b: F.layer_norm(x, (4,), w, b), [(3, 4), (4,), (4,)]),
        "F.cross_entropy": (lambda a: F.cross_entropy(a, mt.tensor([1, 0, 3], device=device)), [(3, 4)]),
        "F.sdpa": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, mask), [(2, 3, 8), (2, 4, 8), (2, 4, 8)]),
    }


@requires_gpu
@pytest.mark.gpu
@pytest.mark.parametrize("name", list(_fused_ops("cpu")))
def test_fused_op_on_the_gpu_matches_the_cpu(name):
    rng = np.random.default_rng(1)
    inputs = [rng.uniform(0.5, 2.0, s) for s in _fused_ops("cpu")[name][1]]
    # each device builds its own mask / targets: run forward on each with that device's closure
    results = {d: _run(_fused_ops(d)[name][0], inputs, d) for d in ("cpu", "cuda")}
    (value_cpu, grads_cpu), (value_gpu, grads_gpu) = results["cpu"], results["cuda"]
    np.testing.assert_allclose(value_gpu, value_cpu, rtol=1e-10, atol=1e-12)
    for g_gpu, g_cpu in zip(grads_gpu, grads_cpu):
        np.testing.assert_allclose(g_gpu, g_cpu, rtol=1e-10, atol=1e-12)


def test_a_bare_cpu_state_from_an_older_checkpoint_is_still_restored():
    old = np.random.default_rng(3).bit_generator.state   # what checkpoints held before the GPU's state was added
    expected = np.random.default_rng(3).standard_normal(4)
    assert backend.set_rng_state(old, "cpu")
    np.testing.assert_array_equal(backend.rng("cpu").standard_normal(4), expected)
