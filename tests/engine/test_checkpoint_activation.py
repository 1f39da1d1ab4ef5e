"""mt.utils.checkpoint.checkpoint: the same values and gradients as the block itself (and as central differences),
fewer bytes saved for backward, dropout replayed in the recomputation."""
import numpy as np
import pytest
from finite_differences import central_differences

import minitorch as mt
import minitorch.functional as F
from minitorch import nn
from minitorch.tools.graph_memory import saved_bytes
from minitorch.utils.checkpoint import checkpoint


def block(x, w):
    return (x @ w).tanh().exp() * x.sigmoid()


def np_block(x, w):
    return np.exp(np.tanh(x @ w)) / (1 + np.exp(-x))


def test_values_and_gradients_match_the_block_and_central_differences():
    rng = np.random.default_rng(0)
    xv, wv = rng.standard_normal((4, 3)), rng.standard_normal((3, 3))
    x = mt.tensor(xv, dtype=mt.float64, requires_grad=True)
    w = mt.tensor(wv, dtype=mt.float64, requires_grad=True)
    out = checkpoint(block, x, w)
    np.testing.assert_allclose(out.numpy(), np_block(xv, wv), rtol=1e-12)
    (out * out).sum().backward()
    gx, gw = central_differences(lambda a, b: (np_block(a, b) ** 2).sum(), [xv, wv])
    np.testing.assert_allclose(x.grad.numpy(), gx, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(w.grad.numpy(), gw, rtol=1e-6, atol=1e-8)


def test_parameters_captured_by_the_block_get_their_gradients():
    mt.manual_seed(0)
    layer = nn.Linear(3, 2, dtype=mt.float64)
    x = mt.tensor(np.ones((5, 3)), dtype=mt.float64, requires_grad=True)
    layer(x).tanh().sum().backward()
    expected = {n: p.grad.numpy().copy() for n, p in layer.named_parameters()}
    x_grad = x.grad.numpy().copy()
    layer.zero_grad()
    x.grad = None
    checkpoint(lambda v: layer(v).tanh(), x).sum().backward()
    for n, p in layer.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), expected[n], rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), x_grad, rtol=1e-12)


def test_only_the_inputs_are_saved():
    x = mt.tensor(np.ones((64, 32)), dtype=mt.float64, requires_grad=True)
    w = mt.tensor(np.ones((32, 32)) / 32, dtype=mt.float64, requires_grad=True)
    plain, kept = saved_bytes(block(x, w)), saved_bytes(checkpoint(block, x, w))
    assert kept == x.data.nbytes + w.data.nbytes < plain


def test_dropout_inside_is_replayed_so_the_gradient_is_the_blocks(device):
    """On the GPU the generator's state is copied on the device (no read to the host)."""
    x = mt.tensor(np.linspace(-1, 1, 40).reshape(8, 5), dtype=mt.float64, device=device, requires_grad=True)
    mt.manual_seed(3)
    F.dropout(x * 2, 0.5).sum().backward()
    expected = x.grad.numpy().copy()
    x.grad = None
    mt.manual_seed(3)
    out = checkpoint(lambda v: F.dropout(v * 2, 0.5), x)
    after_forward = mt.rand(3, device=device).numpy()   # the recomputation must not move the caller's stream
    mt.manual_seed(3)
    checkpoint(lambda v: F.dropout(v * 2, 0.5), x)
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), expected)
    np.testing.assert_array_equal(mt.rand(3, device=device).numpy(), after_forward)


@pytest.mark.parametrize("p, copies", [(0.0, 1), (0.5, 5)])
def test_the_generator_state_is_copied_only_when_something_was_drawn(device, monkeypatch, p, copies):
    """A GPU's generator state is 12 MiB (the stand-in's is as large): four checkpointed blocks without dropout share
    one copy; with dropout each block drew before the next and keeps its own (to replay its masks), and backward
    copies the state once more, to restore it after the replays."""
    import minitorch.utils.checkpoint as ckpt
    taken = []
    monkeypatch.setattr(ckpt, "_get_rng", lambda dev, get=ckpt._get_rng: taken.append(dev) or get(dev))
    mt.manual_seed(5)
    x = mt.tensor(np.linspace(-1, 1, 40).reshape(8, 5), dtype=mt.float64, device=device, requires_grad=True)
    y = x
    for _ in range(4):
        y = checkpoint(lambda v: F.dropout(v.tanh(), p), y)
    y.sum().backward()
    assert taken == [device] * copies
    expected = x.grad.numpy().copy()
    mt.manual_seed(5)
    x.grad, y = None, x
    for _ in range(4):
        y = F.dropout(y.tanh(), p)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-12)


def test_second_order_goes_through_the_block():
    x = mt.tensor([0.3, -0.8], dtype=mt.float64, requires_grad=True)
    (g,) = mt.grad(checkpoint(lambda v: (v * v * v).sum(), x), x, create_graph=True)
    np.testing.assert_allclose(g.numpy(), 3 * x.numpy() ** 2)
    (gg,) = mt.grad(g.sum(), x)
    np.testing.assert_allclose(gg.numpy(), 6 * x.numpy())


def test_bad_use_is_named():
    with pytest.raises(TypeError, match="checkpoint: the function must return one Tensor"):
        checkpoint(lambda v: (v, v), mt.ones(2, requires_grad=True))
    with pytest.raises(TypeError, match="checkpoint: the first argument must be a function"):
        checkpoint(mt.ones(2), mt.ones(2))


@pytest.mark.slow
def test_the_transformer_memory_experiment_runs_and_checkpointing_saves_bytes(capsys):
    import runpy
    from pathlib import Path
    script = runpy.run_path(str(Path(__file__).resolve().parents[2] / "examples" / "checkpoint_memory.py"))
    script["main"](["--batch", "2", "--lengths", "6"])
    row = capsys.readouterr().out.strip().splitlines()[-1].split()
    plain, checkpointed, diff = float(row[1]), float(row[3]), float(row[-1])
    assert checkpointed < plain and diff == 0.0


def test_checkpoint_matches_pytorch():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed: the comparison with it is skipped")
    from torch.utils.checkpoint import checkpoint as torch_checkpoint
    rng = np.random.default_rng(1)
    xv, wv = rng.standard_normal((4, 3)), rng.standard_normal((3, 3))
    xt, wt = torch.tensor(xv, requires_grad=True), torch.tensor(wv, requires_grad=True)
    (torch_checkpoint(block, xt, wt, use_reentrant=True) ** 2).sum().backward()
    x = mt.tensor(xv, dtype=mt.float64, requires_grad=True)
    w = mt.tensor(wv, dtype=mt.float64, requires_grad=True)
    (checkpoint(block, x, w) ** 2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(w.grad.numpy(), wt.grad.numpy(), rtol=1e-12)
