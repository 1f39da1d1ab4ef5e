"""nn: Parameter, Module registration, the layers, containers, train/eval, state_dict, clip_grad_norm_."""
import math

import numpy as np
import pytest

import minitorch as mt
import minitorch.functional as F
from minitorch import nn


class TwoLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.first = nn.Linear(3, 4)
        self.blocks = nn.ModuleList([nn.Linear(4, 4), nn.Dropout(0.5)])
        self.scale = nn.Parameter(mt.ones(1))
        self.register_buffer("offset", mt.zeros(4))

    def forward(self, x):
        h = self.blocks[1](self.blocks[0](self.first(x)).relu())
        return h * self.scale + self.offset


# ----- Parameter and Module -----
def test_parameter_is_a_trainable_leaf():
    p = nn.Parameter(mt.tensor([1.0, 2.0], dtype=np.float64))
    assert isinstance(p, mt.Tensor) and p.requires_grad and p.is_leaf and p.dtype == np.float64
    assert nn.Parameter(np.zeros(3)).dtype == np.float32  # NumPy floats become float32, as in mt.tensor
    assert not nn.Parameter(mt.ones(2), requires_grad=False).requires_grad


def test_modules_register_parameters_buffers_and_submodules():
    model = TwoLayer()
    names = [n for n, _ in model.named_parameters()]
    assert names == ["scale", "first.weight", "first.bias", "blocks.0.weight", "blocks.0.bias"]
    assert [n for n, _ in model.named_buffers()] == ["offset"]
    assert list(model.state_dict()) == names + ["offset"]
    assert model.num_parameters() == 1 + 12 + 4 + 16 + 4
    assert [type(m).__name__ for m in model.children()] == ["Linear", "ModuleList"]
    model.first = None  # reassigning a name unregisters it
    assert "first.weight" not in dict(model.named_parameters())


def test_shared_parameters_are_listed_once():
    model = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2))
    model[1].weight = model[0].weight
    assert len(list(model.parameters())) == 3


def test_assigning_before_super_init_is_a_clear_error():
    class Broken(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(mt.ones(1))

    with pytest.raises(AttributeError, match="super\\(\\).__init__"):
        Broken()


def test_train_and_eval_reach_every_submodule():
    model = TwoLayer()
    assert all(m.training for m in model.modules())
    assert model.eval() is model
    assert not any(m.training for m in model.modules())
    model.train()
    assert all(m.training for m in model.modules())


def test_zero_grad_clears_every_parameter():
    model = TwoLayer()
    model(mt.randn(2, 3)).sum().backward()
    assert all(p.grad is not None for p in model.parameters())
    model.zero_grad()
    assert all(p.grad is None for p in model.parameters())


# ----- layers -----
def test_linear_computes_x_wt_plus_b_and_is_initialised_in_bounds():
    mt.manual_seed(0)
    layer = nn.Linear(20, 3)
    bound = 1 / math.sqrt(20)
    for p in (layer.weight, layer.bias):
        assert np.abs(p.numpy()).max() <= bound and np.abs(p.numpy()).max() > bound / 2
    x = np.random.default_rng(0).standard_normal((2, 5, 20)).astype(np.float32)
    y = layer(mt.tensor(x))
    assert y.shape == (2, 5, 3) and y.dtype == np.float32
    np.testing.assert_allclose(y.numpy(), x @ layer.weight.numpy().T + layer.bias.numpy(), rtol=1e-5, atol=1e-6)
    assert nn.Linear(4, 2, bias=False).bias is None
    assert len(list(nn.Linear(4, 2, bias=False).parameters())) == 1
    with pytest.raises(ValueError, match=r"4 features.*\(3, 5\)"):
        nn.Linear(5, 3)(mt.ones(2, 4))


def test_embedding_looks_up_rows_and_adds_gradients_of_repeated_ids():
    emb = nn.Embedding(5, 3, dtype=np.float64)
    ids = mt.tensor([[1, 3, 1], [1, 0, 4]])
    out = emb(ids)
    np.testing.assert_array_equal(out.numpy(), emb.weight.numpy()[ids.numpy()])
    g = np.arange(18, dtype=np.float64).reshape(2, 3, 3)
    out.backward(mt.tensor(g, dtype=np.float64))
    expected = np.zeros((5, 3))
    for (i, j), k in np.ndenumerate(ids.numpy()):
        expected[k] += g[i, j]
    np.testing.assert_array_equal(emb.weight.grad.numpy(), expected)
    assert emb.weight.grad.numpy()[1].tolist() == (g[0, 0] + g[0, 2] + g[1, 0]).tolist()


def test_embedding_padding_row_is_zero_and_never_trained():
    emb = nn.Embedding(4, 2, padding_idx=0)
    assert emb.weight.numpy()[0].tolist() == [0.0, 0.0]
    emb(mt.tensor([0, 2, 0])).sum().backward()
    assert emb.weight.grad.numpy()[0].tolist() == [0.0, 0.0]
    assert emb.weight.grad.numpy()[2].tolist() == [1.0, 1.0]


@pytest.mark.parametrize("ids, error, pattern", [([0, 5], IndexError, r"\[0, 5\).*0 to 5"), ([-1], IndexError, "-1"),
                                                 ([0.0, 1.0], TypeError, "integers")])
def test_embedding_rejects_bad_ids(ids, error, pattern):
    with pytest.raises(error, match=pattern):
        nn.Embedding(5, 2)(mt.tensor(ids))


def test_dropout_zeroes_about_p_scales_the_rest_and_is_identity_in_eval():
    mt.manual_seed(0)
    drop = nn.Dropout(0.25)
    x = mt.ones(200, 100, requires_grad=True)
    y = drop(x)
    values = y.numpy()
    dropped = (values == 0).mean()
    assert abs(dropped - 0.25) < 4 * math.sqrt(0.25 * 0.75 / values.size)  # within 4 standard deviations
    np.testing.assert_allclose(values[values != 0], 1 / 0.75, rtol=1e-6)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), values)  # the same mask scales the gradient
    drop.eval()
    assert drop(x) is x
    assert F.dropout(x, 0.0) is x
    with pytest.raises(ValueError, match=r"\[0, 1\)"):
        nn.Dropout(1.0)
    with pytest.raises(ValueError, match=r"\[0, 1\)"):
        F.dropout(x, -0.1)


def test_layer_norm_module_normalises_the_last_dim():
    ln = nn.LayerNorm(6)
    assert [n for n, _ in ln.named_parameters()] == ["weight", "bias"]
    x = mt.tensor(np.random.default_rng(0).standard_normal((3, 6)) * 5 + 2, dtype=np.float64)
    y = ln(x).numpy()
    np.testing.assert_allclose(y.mean(-1), 0, atol=1e-10)
    np.testing.assert_allclose(y.var(-1), 1 / (1 + 1e-5 / x.numpy().var(-1)), rtol=1e-8)


def test_activation_modules():
    x = mt.tensor([-1.0, 0.5])
    np.testing.assert_array_equal(nn.ReLU()(x).numpy(), [0.0, 0.5])
    np.testing.assert_array_equal(nn.GELU()(x).numpy(), x.gelu().numpy())


def test_sequential_applies_in_order_and_module_list_indexes():
    double, add_one = nn.Linear(1, 1), nn.Linear(1, 1)
    for layer, (w, b) in ((double, (2.0, 0.0)), (add_one, (1.0, 1.0))):
        layer.weight.data[...] = w
        layer.bias.data[...] = b
    assert nn.Sequential(double, add_one)(mt.tensor([[3.0]])).item() == 7.0
    assert nn.Sequential(add_one, double)(mt.tensor([[3.0]])).item() == 8.0
    blocks = nn.ModuleList()
    blocks.append(double).append(add_one)
    assert len(blocks) == 2 and blocks[1] is add_one and blocks[-1] is add_one and list(blocks) == [double, add_one]
    assert len(list(blocks.parameters())) == 4


def test_init_helpers():
    mt.manual_seed(0)
    w = nn.init.xavier_uniform_(mt.zeros(30, 50))
    bound = math.sqrt(6 / 80)
    assert np.abs(w.numpy()).max() <= bound and np.abs(w.numpy()).max() > 0.9 * bound
    n = nn.init.normal_(mt.zeros(10_000), mean=1.0, std=2.0).numpy()
    assert abs(n.mean() - 1.0) < 0.1 and abs(n.std() - 2.0) < 0.1
    assert nn.init.zeros_(mt.ones(3)).tolist() == [0, 0, 0] and nn.init.ones_(mt.zeros(2)).tolist() == [1, 1]


def test_module_to_device_moves_parameters_buffers_and_grads(device):
    model = TwoLayer()
    model(mt.randn(2, 3)).sum().backward()
    assert model.to(device) is model
    for t in list(model.parameters()) + [model.offset]:
        assert t.device == device
    assert all(p.grad.device == device for p in model.parameters())
    assert model(mt.randn(2, 3, device=device)).device == device


# ----- state_dict / load_state_dict -----
def test_state_dict_round_trip_gives_the_same_model():
    mt.manual_seed(0)
    a = TwoLayer().eval()
    mt.manual_seed(1)
    b = TwoLayer().eval()
    x = mt.randn(4, 3)
    assert not np.allclose(a(x).numpy(), b(x).numpy())
    b.load_state_dict(a.state_dict())
    np.testing.assert_array_equal(a(x).numpy(), b(x).numpy())
    a.first.weight.data[...] = 0  # loading copied the values
    assert np.any(b.first.weight.numpy() != 0)


def test_load_state_dict_keeps_the_models_dtype_and_accepts_arrays():
    model = nn.Linear(2, 2, dtype=np.float64)
    model.load_state_dict({"weight": np.ones((2, 2), dtype=np.float32), "bias": mt.zeros(2)})
    assert model.weight.dtype == np.float64 and model.weight.numpy().tolist() == [[1, 1], [1, 1]]


def test_load_state_dict_missing_and_unexpected_keys():
    model = TwoLayer()
    state = dict(model.state_dict())
    del state["first.bias"]
    state["extra.weight"] = mt.ones(2)
    with pytest.raises(RuntimeError, match=r'(?s)for TwoLayer:.*Missing key\(s\) in state_dict: "first\.bias".*'
                                           r'Unexpected key\(s\) in state_dict: "extra\.weight"'):
        model.load_state_dict(state)
    before = model.first.weight.numpy().copy()
    state["first.weight"] = mt.zeros(4, 3)
    result = model.load_state_dict(state, strict=False)  # loads what matches, reports the rest
    assert result.missing_keys == ["first.bias"] and result.unexpected_keys == ["extra.weight"]
    assert np.all(model.first.weight.numpy() == 0) and not np.all(before == 0)


def test_load_state_dict_mis_shaped_key():
    model = TwoLayer()
    state = dict(model.state_dict())
    state["blocks.0.weight"] = mt.zeros(4, 5)
    with pytest.raises(ValueError,
                       match=r"blocks\.0\.weight has shape \(4, 5\) in the state but \(4, 4\) in the model"):
        model.load_state_dict(state)


# ----- clip_grad_norm_ -----
def _with_grads(grads):
    params = [nn.Parameter(mt.zeros(*np.shape(g), dtype=np.float64)) for g in grads]
    for p, g in zip(params, grads):
        p.grad = mt.tensor(g, dtype=np.float64)
    return params


def test_clip_grad_norm_scales_down_to_max_norm():
    grads = [np.array([[3.0, 0.0], [0.0, 4.0]]), np.array([12.0])]
    params = _with_grads(grads)
    total = nn.utils.clip_grad_norm_(params, max_norm=1.3)
    assert isinstance(total, mt.Tensor) and total.shape == () and total.item() == pytest.approx(13.0)
    scale = 1.3 / (13.0 + 1e-6)
    for p, g in zip(params, grads):
        np.testing.assert_allclose(p.grad.numpy(), g * scale, rtol=1e-12)
    assert math.sqrt(sum(float((p.grad.numpy() ** 2).sum()) for p in params)) == pytest.approx(1.3, rel=1e-6)


def test_clip_grad_norm_leaves_small_gradients_and_skips_missing_ones():
    params = _with_grads([np.array([0.3, 0.4])]) + [nn.Parameter(mt.zeros(2))]
    total = nn.utils.clip_grad_norm_(iter(params), max_norm=1.0)  # any iterable, as in PyTorch
    assert total.item() == pytest.approx(0.5)
    np.testing.assert_array_equal(params[0].grad.numpy(), [0.3, 0.4])
    assert nn.utils.clip_grad_norm_([nn.Parameter(mt.zeros(2))], 1.0).item() == 0.0
