"""The further names the tutorial-style programs of examples/tutorials use, each against PyTorch (values, dtypes,
gradients, errors): narrow, split, chunk, view_as, contiguous, new_zeros, eq/ne/lt..., all/any, a 0-d tensor in a
format string, backward(gradient=), torch.equal, nn.LSTMCell, AdaptiveAvgPool2d, forward hooks, Module.double(),
load_state_dict's (missing_keys, unexpected_keys)."""
import numpy as np
import pytest

import minitorch as mt
from minitorch import nn


@pytest.fixture
def torch():
    return pytest.importorskip("torch", reason="PyTorch is not installed: the comparison with it is skipped")


def both(torch, array, requires_grad=False):
    return (mt.tensor(array, dtype=np.float64, requires_grad=requires_grad),
            torch.tensor(array, requires_grad=requires_grad))


def grads_agree(torch, f, array):
    """f's values and the gradient of sum(w * f(x)) agree between minitorch and PyTorch (f returns a tuple)."""
    ours, theirs = both(torch, array, requires_grad=True)
    out, ref = f(ours), f(theirs)
    assert len(out) == len(ref)
    rng = np.random.default_rng(0)
    total_ours, total_theirs = 0, 0
    for o, r in zip(out, ref):
        assert o.shape == tuple(r.shape)
        np.testing.assert_array_equal(o.detach().numpy(), r.detach().numpy())
        w = rng.standard_normal(o.shape)
        total_ours = total_ours + (o * mt.tensor(w, dtype=np.float64)).sum()
        total_theirs = total_theirs + (r * torch.tensor(w)).sum()
    total_ours.backward()
    total_theirs.backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("f", [
    lambda t: t.split(2, 1), lambda t: t.split([1, 3, 1], 1), lambda t: t.split(2), lambda t: t.chunk(3, 1),
    lambda t: t.chunk(2, 0), lambda t: (t.narrow(1, 1, 3),), lambda t: (t.narrow(0, -2, 2),),
    lambda t: (t.t().contiguous(),), lambda t: (t.view_as(t.reshape(5, 3)),), lambda t: (t.expand_as(t),)],
    ids=["split2", "sections", "split-dim0", "chunk3", "chunk2", "narrow", "narrow-negative", "contiguous",
         "view_as", "expand_as"])
def test_shape_conveniences_match_pytorch_with_gradients(torch, f):
    grads_agree(torch, f, np.arange(15.0).reshape(3, 5) / 7)


def test_shape_conveniences_refuse_as_pytorch(torch):
    x = mt.zeros(3, 5)
    with pytest.raises(IndexError, match="narrow: start 4 and length 3 are out of range"):
        x.narrow(1, 4, 3)
    with pytest.raises(RuntimeError, match=r"split: sizes \[1, 1\] sum to 2, not to dim 1's size 5"):
        x.split([1, 1], 1)
    with pytest.raises(RuntimeError):   # PyTorch refuses the same calls
        torch.zeros(3, 5).narrow(1, 4, 3)
    with pytest.raises(RuntimeError):
        torch.zeros(3, 5).split([1, 1], 1)


def test_new_factories_comparisons_all_any_equal(torch):
    a = np.array([[1.0, 2.0], [3.0, 4.0]])
    ours, theirs = mt.tensor(a, dtype=np.float32), torch.tensor(a, dtype=torch.float32)
    for size in [(3, 2), ((3,),)]:
        z, r = ours.new_zeros(*size), theirs.new_zeros(*size)
        assert z.shape == tuple(r.shape) and z.dtype == np.float32 and not z.numpy().any()
    assert ours.new_ones(2).numpy().tolist() == theirs.new_ones(2).tolist()
    assert ours.new_full((2,), 7.0).numpy().tolist() == theirs.new_full((2,), 7.0).tolist()
    for name in ["eq", "ne", "lt", "le", "gt", "ge"]:
        assert getattr(ours, name)(2.0).numpy().tolist() == getattr(theirs, name)(2.0).tolist(), name
    assert (ours > 0).all().item() is True and (ours > 1).all().item() is False
    assert (ours > 3).any(1).numpy().tolist() == (theirs > 3).any(1).tolist()
    assert mt.equal(ours, ours.clone()) and not mt.equal(ours, ours.reshape(4)) and not mt.equal(ours, ours + 1)


def test_a_0d_tensor_formats_as_its_value(torch):
    assert f"{mt.tensor(1.5):+.2f}" == f"{torch.tensor(1.5):+.2f}" == "+1.50"
    assert "{:>6}".format(mt.tensor(3)) == "{:>6}".format(torch.tensor(3))
    with pytest.raises(TypeError):
        f"{mt.tensor([1.0, 2.0]):.2f}"
    with pytest.raises(TypeError):
        f"{torch.tensor([1.0, 2.0]):.2f}"


def test_backward_takes_pytorchs_gradient_keyword(torch):
    ours, theirs = both(torch, [2.0, 3.0], requires_grad=True)
    (3 * ours ** 3).backward(gradient=mt.tensor([1.0, 0.5], dtype=np.float64))
    (3 * theirs ** 3).backward(gradient=torch.tensor([1.0, 0.5], dtype=torch.float64))
    np.testing.assert_array_equal(ours.grad.numpy(), theirs.grad.numpy())


def copy_weights(torch, ours, theirs):
    """theirs takes ours' weights, by PyTorch's names (the same names and shapes)."""
    theirs.load_state_dict({k: torch.tensor(np.asarray(v.numpy(), dtype=np.float64)) for k, v in
                            ours.state_dict().items()})


@pytest.mark.parametrize("bias, batched", [(True, True), (False, True), (True, False)])
def test_lstm_cell_matches_pytorch(torch, bias, batched):
    rng = np.random.default_rng(1)
    ours, theirs = nn.LSTMCell(3, 4, bias=bias).double(), torch.nn.LSTMCell(3, 4, bias=bias).double()
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    copy_weights(torch, ours, theirs)
    shape = (2,) if batched else ()
    x, h, c = (rng.standard_normal(shape + (n,)) for n in (3, 4, 4))
    xo, xt = both(torch, x, requires_grad=True)
    for state_o, state_t in [(None, None), ((mt.tensor(h, dtype=np.float64), mt.tensor(c, dtype=np.float64)),
                                            (torch.tensor(h), torch.tensor(c)))]:
        (ho, co), (ht, ct) = ours(xo, state_o), theirs(xt, state_t)
        np.testing.assert_allclose(ho.detach().numpy(), ht.detach().numpy(), rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(co.detach().numpy(), ct.detach().numpy(), rtol=1e-12, atol=1e-15)
    (ho.sum() + 2 * co.sum()).backward()
    (ht.sum() + 2 * ct.sum()).backward()
    np.testing.assert_allclose(xo.grad.numpy(), xt.grad.numpy(), rtol=1e-12, atol=1e-15)
    for (name, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-12, atol=1e-15, err_msg=name)
    with pytest.raises(RuntimeError, match="LSTMCell: input has inconsistent input_size: got 5 expected 3"):
        ours(mt.zeros(2, 5, dtype=np.float64))


@pytest.mark.parametrize("output_size", [1, (3, 2), (7, 5), (2, None), 4])
def test_adaptive_avg_pool2d_matches_pytorch(torch, output_size):
    x = np.random.default_rng(2).standard_normal((2, 3, 7, 5))
    ours, theirs = both(torch, x, requires_grad=True)
    out, ref = nn.AdaptiveAvgPool2d(output_size)(ours), torch.nn.AdaptiveAvgPool2d(output_size)(theirs)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-12, atol=1e-15)
    w = np.random.default_rng(3).standard_normal(out.shape)
    (out * mt.tensor(w, dtype=np.float64)).sum().backward()
    (ref * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-12, atol=1e-15)


def test_forward_hooks_see_and_may_replace_the_output(torch):
    for lib in (mt, torch):
        seen = []
        layer = lib.nn.Linear(3, 2)
        handle = layer.register_forward_hook(lambda m, args, out: seen.append((type(m).__name__, tuple(out.shape))))
        layer(lib.ones(4, 3))
        handle.remove()
        layer(lib.ones(4, 3))
        assert seen == [("Linear", (4, 2))]
        layer.register_forward_hook(lambda m, args, out: out * 0)
        assert not layer(lib.ones(1, 3)).detach().numpy().any()


def test_double_and_float_cast_every_floating_parameter(torch):
    for lib in (mt, torch):
        model = lib.nn.Sequential(lib.nn.Linear(2, 3), lib.nn.LSTMCell(3, 2))
        assert {str(p.dtype).split(".")[-1] for p in model.double().parameters()} == {"float64"}
        assert {str(p.dtype).split(".")[-1] for p in model.float().parameters()} == {"float32"}


def test_load_state_dict_reports_missing_and_unexpected_keys_as_pytorch(torch):
    results = []
    for lib in (mt, torch):
        source = lib.nn.Sequential(lib.nn.Linear(3, 2), lib.nn.Linear(2, 2))
        target = lib.nn.Sequential(lib.nn.Linear(3, 2), lib.nn.ReLU(), lib.nn.Linear(2, 1))
        state = {k: v for k, v in source.state_dict().items()}
        result = target.load_state_dict(state, strict=False)
        results.append((sorted(result.missing_keys), sorted(result.unexpected_keys)))
        missing, unexpected = result   # a pair, as PyTorch's
        with pytest.raises(RuntimeError, match=r"(?s)Error\(s\) in loading state_dict for Sequential:.*"
                                               r'Missing key\(s\) in state_dict: "2\.weight", "2\.bias"'):
            target.load_state_dict(state)
    assert results[0] == results[1] == (["2.bias", "2.weight"], ["1.bias", "1.weight"])
