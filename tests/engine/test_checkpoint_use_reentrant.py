"""checkpoint(..., use_reentrant=False), PyTorch's recommended form: the parameters a block captures get their
gradients even when its input does not require grad (the reentrant form cannot see them), mt.grad works through it,
dropout is replayed, and gradients equal the block's own and central differences."""
import numpy as np
import pytest
from finite_differences import central_differences

import minitorch as mt
import minitorch.functional as F
from minitorch import nn
from minitorch.tools.graph_memory import saved_bytes
from minitorch.utils.checkpoint import checkpoint


def test_a_block_whose_input_needs_no_grad_still_trains_its_parameters():
    rng = np.random.default_rng(0)
    xv, wv, bv = rng.standard_normal((5, 3)), rng.standard_normal((2, 3)), rng.standard_normal(2)
    w = mt.tensor(wv, dtype=mt.float64, requires_grad=True)
    b = mt.tensor(bv, dtype=mt.float64, requires_grad=True)
    x = mt.tensor(xv, dtype=mt.float64)   # data: no grad

    def block(x):
        return F.linear(x, w, b).tanh()
    out = checkpoint(block, x, use_reentrant=False)
    np.testing.assert_allclose(out.numpy(), np.tanh(xv @ wv.T + bv), rtol=1e-12)
    (out * out).sum().backward()
    gw, gb = central_differences(lambda w_, b_: (np.tanh(xv @ w_.T + b_) ** 2).sum(), [wv, bv])
    np.testing.assert_allclose(w.grad.numpy(), gw, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(b.grad.numpy(), gb, rtol=1e-6, atol=1e-8)
    with pytest.raises(RuntimeError, match="does not require grad"):   # the reentrant form, as PyTorch's
        checkpoint(block, x, use_reentrant=True).sum().backward()


def test_module_with_input_that_requires_grad_and_mt_grad():
    mt.manual_seed(0)
    layer = nn.Linear(3, 4, dtype=mt.float64)
    x = mt.randn(2, 3, dtype=mt.float64, requires_grad=True)
    expected = mt.grad(layer(x).sigmoid().sum(), [x, layer.weight, layer.bias])
    got = mt.grad(checkpoint(lambda v: layer(v).sigmoid(), x, use_reentrant=False).sum(),
                  [x, layer.weight, layer.bias])
    for e, g in zip(expected, got):
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-12)
    assert layer.weight.grad is None   # mt.grad leaves .grad alone


def test_less_is_saved_and_dropout_is_replayed():
    mt.manual_seed(0)
    lin = nn.Linear(8, 8, dtype=mt.float64)
    x = mt.randn(16, 8, dtype=mt.float64)

    def block(v):
        return F.dropout(lin(v).relu(), p=0.5) * lin(v).tanh()
    mt.manual_seed(1)
    plain = block(x)
    mt.manual_seed(1)
    kept = checkpoint(block, x, use_reentrant=False)
    np.testing.assert_array_equal(kept.numpy(), plain.numpy())
    assert saved_bytes(kept) < saved_bytes(plain)
    plain.sum().backward()
    expected = lin.weight.grad.numpy().copy()
    lin.weight.grad = None
    kept.sum().backward()   # recomputed with the first forward's dropout mask
    np.testing.assert_allclose(lin.weight.grad.numpy(), expected, rtol=1e-12)


def test_under_no_grad_and_bad_flags():
    lin = nn.Linear(2, 2)
    with mt.no_grad():
        assert not checkpoint(lin, mt.ones(1, 2), use_reentrant=False).requires_grad
    with pytest.raises(TypeError, match="use_reentrant must be True or False"):
        checkpoint(lin, mt.ones(1, 2), use_reentrant="no")
    with pytest.raises(TypeError, match="must return one Tensor"):
        checkpoint(lambda v: (v, v), mt.ones(2, requires_grad=True), use_reentrant=False)
