"""The names PyTorch's beginner tutorials type first: top-level math (every elementwise Tensor method as mt.name,
sin, cos, pow with a tensor exponent, maximum/minimum), the factories (linspace, full, eye, rand, randint, *_like),
dtype and device spellings, and minitorch.utils.data. Values against NumPy written here, and against PyTorch where
it is installed (the first- and second-order gradients of the new ops are in tests/op_table.py)."""
import math

import numpy as np
import pytest

import minitorch as mt
from minitorch.utils.data import DataLoader, Dataset, TensorDataset, random_split

ELEMENTWISE_METHODS = ["exp", "log", "sqrt", "tanh", "sigmoid", "relu", "abs", "erf", "round", "clamp", "masked_fill",
                       "where"]


def test_every_elementwise_method_is_also_a_top_level_function():
    x = mt.tensor([[0.5, 1.5], [2.0, 0.25]], dtype=np.float64)
    for name in ELEMENTWISE_METHODS:
        assert callable(getattr(mt, name)), name
    for name in ["exp", "log", "sqrt", "tanh", "sigmoid", "relu", "abs", "erf", "round"]:
        np.testing.assert_array_equal(getattr(mt, name)(x).numpy(), getattr(x, name)().numpy())


def torch_or_skip():
    return pytest.importorskip("torch", reason="PyTorch is not installed: the comparison with it is skipped")


@pytest.mark.parametrize("name, args", [
    ("sin", 1), ("cos", 1), ("sqrt", 1), ("abs", 1), ("exp", 1), ("square", 1), ("neg", 1), ("rsqrt", 1),
    ("pow", 2), ("maximum", 2), ("minimum", 2), ("mul", 2), ("div", 2), ("add", 2), ("sub", 2)])
def test_top_level_math_matches_pytorch_values_and_gradients(name, args):
    torch = torch_or_skip()
    rng = np.random.default_rng(1)
    a = rng.uniform(0.3, 2.0, (3, 4))
    b = rng.uniform(0.3, 2.0, (4,))
    b[0] = a[0, 0]   # a tie, where maximum and minimum split the gradient
    inputs = [a, b][:args]
    ours = [mt.tensor(v, dtype=np.float64, requires_grad=True) for v in inputs]
    theirs = [torch.tensor(v, requires_grad=True) for v in inputs]
    out, ref = getattr(mt, name)(*ours), getattr(torch, name)(*theirs)
    np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), rtol=1e-12)
    w = rng.standard_normal(out.shape)
    (out * mt.tensor(w, dtype=np.float64)).sum().backward()
    (ref * torch.tensor(w)).sum().backward()
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o.grad.numpy(), t.grad.numpy(), rtol=1e-12, atol=1e-15)


def test_maximum_ties_share_the_gradient_and_refuse_numbers():
    a = mt.tensor([1.0, 2.0, 3.0], dtype=np.float64, requires_grad=True)
    b = mt.tensor([2.0, 2.0, 1.0], dtype=np.float64, requires_grad=True)
    mt.maximum(a, b).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [0.0, 0.5, 1.0])
    np.testing.assert_array_equal(b.grad.numpy(), [1.0, 0.5, 0.0])
    with pytest.raises(TypeError, match="argument 'other' must be Tensor, not float"):
        mt.maximum(a, 0.0)


def test_flatten_and_dot():
    x = mt.arange(24).reshape(2, 3, 4)
    assert mt.flatten(x).shape == (24,) and mt.flatten(x, 1).shape == (2, 12)
    assert mt.flatten(x, 0, 1).shape == (6, 4)
    assert mt.dot(mt.tensor([1.0, 2.0]), mt.tensor([3.0, 4.0])).item() == 11.0


# ----- factories -----
def test_linspace_eye_full_and_likes():
    x = mt.linspace(-math.pi, math.pi, 2000)
    assert x.dtype == np.float32 and x.shape == (2000,)
    np.testing.assert_allclose(x.numpy(), np.linspace(-math.pi, math.pi, 2000), rtol=1e-6)
    np.testing.assert_array_equal(mt.eye(3).numpy(), np.eye(3))
    np.testing.assert_array_equal(mt.eye(2, 3, dtype=mt.double).numpy(), np.eye(2, 3))
    assert mt.full((2, 3), 7.0).numpy().tolist() == [[7.0] * 3] * 2
    t = mt.ones(2, 5, dtype=np.float64)
    for like in (mt.full_like(t, 3.0), mt.rand_like(t), mt.randn_like(t), mt.empty_like(t), mt.zeros_like(t)):
        assert like.shape == t.shape and like.dtype == np.float64
    assert mt.full_like(t, 3.0).numpy().min() == 3.0
    r = mt.rand_like(t).numpy()
    assert (0 <= r).all() and (r < 1).all()
    assert mt.empty(3, 2).shape == (3, 2)


def test_randint_and_randperm_from_a_seeded_generator():
    g = mt.Generator().manual_seed(5)
    first = mt.randint(3, 9, (1000,), generator=g)
    assert first.dtype == np.int64 and first.numpy().min() == 3 and first.numpy().max() == 8
    again = mt.randint(3, 9, (1000,), generator=mt.Generator().manual_seed(5))
    np.testing.assert_array_equal(first.numpy(), again.numpy())
    assert mt.randint(4, (2, 3)).shape == (2, 3)
    assert sorted(mt.randperm(10, generator=g).tolist()) == list(range(10))
    mt.manual_seed(0)
    a = mt.randint(0, 100, (5,))
    mt.manual_seed(0)
    np.testing.assert_array_equal(a.numpy(), mt.randint(0, 100, (5,)).numpy())


def test_dtype_and_device_spellings():
    assert mt.float == np.float32 and mt.double == np.float64 and mt.long == np.int64
    assert mt.device("cpu") == "cpu" and mt.device("cuda:0") == "cuda"
    assert mt.zeros(2, dtype=mt.float, device=mt.device("cpu")).dtype == np.float32


# ----- utils.data -----
def test_tensor_dataset_and_loader_batches():
    X, y = mt.arange(10).reshape(10, 1).float(), mt.arange(10)
    ds = TensorDataset(X, y)
    assert len(ds) == 10 and ds[3][1].item() == 3
    batches = list(DataLoader(ds, batch_size=4))
    assert [b[0].shape for b in batches] == [(4, 1), (4, 1), (2, 1)]
    assert batches[2][1].tolist() == [8, 9] and len(DataLoader(ds, batch_size=4)) == 3
    dropped = DataLoader(ds, batch_size=4, drop_last=True)
    assert len(dropped) == 2 and [b[1].shape for b in dropped] == [(4,), (4,)]
    with pytest.raises(ValueError, match="size mismatch"):
        TensorDataset(X, mt.arange(3))
    with pytest.raises(ValueError, match="batch_size should be a positive integer"):
        DataLoader(ds, batch_size=0)


def test_shuffle_draws_a_new_permutation_each_epoch_from_the_generator():
    ds = TensorDataset(mt.arange(20))
    loader = DataLoader(ds, batch_size=5, shuffle=True, generator=mt.Generator().manual_seed(1))
    epochs = [[i for (b,) in loader for i in b.tolist()] for _ in range(2)]
    assert all(sorted(e) == list(range(20)) for e in epochs) and epochs[0] != epochs[1]
    same = DataLoader(ds, batch_size=5, shuffle=True, generator=mt.Generator().manual_seed(1))
    assert [i for (b,) in same for i in b.tolist()] == epochs[0]


def test_a_dataset_of_its_own_collated_by_default():
    class Squares(Dataset):
        def __len__(self):
            return 5

        def __getitem__(self, i):
            return {"x": float(i), "y": i * i, "name": str(i)}

    batch = next(iter(DataLoader(Squares(), batch_size=3)))
    assert batch["x"].dtype == np.float64 and batch["y"].dtype == np.int64 and batch["name"] == ["0", "1", "2"]
    assert batch["y"].tolist() == [0, 1, 4]
    parts = random_split(Squares(), [3, 2], generator=mt.Generator().manual_seed(0))
    assert sorted([parts[0][i]["y"] for i in range(3)] + [parts[1][i]["y"] for i in range(2)]) == [0, 1, 4, 9, 16]


def test_torch_cuda_questions():
    from minitorch import backend
    assert mt.cuda.is_available() == backend.cuda_available()
    assert mt.cuda.device_count() == (1 if backend.cuda_available() else 0)
    device = "cuda" if mt.cuda.is_available() else "cpu"
    assert mt.zeros(1, device=device).device == device
    mt.cuda.manual_seed(3)
    a = mt.randn(2).numpy()
    mt.manual_seed(3)
    np.testing.assert_array_equal(a, mt.randn(2).numpy())
