"""Gaps found running PyTorch's tutorials and examples under `import minitorch as torch`, each held to PyTorch:
torch.matmul with PyTorch's argument names (the polynomial on tensors), optim.LBFGS (time_sequence_prediction)."""
import numpy as np
import pytest

import minitorch as mt
from minitorch import nn, optim

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(52)


# ----- torch.matmul(input=..., other=...) -----
@pytest.mark.parametrize("shapes", [((5,), (5,)), ((3, 4), (4,)), ((2, 3, 4), (4, 2))])
def test_matmul_takes_pytorchs_argument_names(shapes):
    a, b = (RNG.standard_normal(s) for s in shapes)
    ours = mt.matmul(input=mt.tensor(a, dtype=mt.float64), other=mt.tensor(b, dtype=mt.float64))
    theirs = torch.matmul(input=torch.tensor(a), other=torch.tensor(b))
    assert ours.shape == tuple(theirs.shape) and ours.dtype == mt.float64
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)


def test_matmul_by_keyword_has_the_gradient_of_matmul():
    a, b = RNG.standard_normal((3, 4)), RNG.standard_normal(4)
    x, w = mt.tensor(a, requires_grad=True, dtype=mt.float64), mt.tensor(b, requires_grad=True, dtype=mt.float64)
    tx, tw = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    mt.matmul(input=x, other=w).sum().backward()
    torch.matmul(input=tx, other=tw).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-12)


# ----- optim.LBFGS -----
X, Y = RNG.standard_normal((16, 3)), RNG.standard_normal((16, 1))
W1, B1, W2, B2 = (RNG.standard_normal(s) * 0.5 for s in [(5, 3), (5,), (1, 5), (1,)])


def lbfgs_run(lib, dtype, steps, **options):
    """A tanh net fitted by LBFGS from the same weights: the loss each step returned, the weights after each step,
    and the optimizer's counts."""
    model = lib.nn.Sequential(lib.nn.Linear(3, 5), lib.nn.Tanh(), lib.nn.Linear(5, 1))
    if dtype is lib.float64:
        model.double()
    with lib.no_grad():
        for p, w in zip(model.parameters(), (W1, B1, W2, B2)):
            p.copy_(lib.tensor(w, dtype=dtype))
    x, y = lib.tensor(X, dtype=dtype), lib.tensor(Y, dtype=dtype)
    opt = lib.optim.LBFGS(model.parameters(), **options)

    def closure():
        opt.zero_grad()
        loss = lib.nn.functional.mse_loss(model(x), y)
        loss.backward()
        return loss

    losses, weights = [], []
    for _ in range(steps):
        losses.append(float(opt.step(closure).detach()))
        weights.append([np.array(p.detach().numpy(), dtype=np.float64) for p in model.parameters()])
    first = next(iter(model.parameters()))
    state = opt.state[first]
    return losses, weights, (state["n_iter"], state["func_evals"])


@pytest.mark.parametrize("options", [{}, {"lr": 0.5, "max_iter": 7, "history_size": 3},
                                     {"lr": 0.8, "max_iter": 4, "max_eval": 3},
                                     {"tolerance_change": 1e-3}, {"tolerance_grad": 1e-2}])
def test_lbfgs_follows_torch_over_several_steps(options):
    ours = lbfgs_run(mt, mt.float64, 3, **options)
    theirs = lbfgs_run(torch, torch.float64, 3, **options)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-10)
    for mine, its in zip(ours[1], theirs[1]):
        for a, b in zip(mine, its):
            np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-10)
    assert ours[2] == theirs[2]


def test_lbfgs_in_float32_keeps_float32_and_follows_torch():
    # (one step of ten iterations: float32 rounding grows with each iteration, in both)
    ours = lbfgs_run(mt, mt.float32, 1, lr=0.8, max_iter=10)
    theirs = lbfgs_run(torch, torch.float32, 1, lr=0.8, max_iter=10)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-6)
    for a, b in zip(ours[1][-1], theirs[1][-1]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    assert ours[2] == theirs[2]
    model = nn.Linear(2, 1)
    opt = optim.LBFGS(model.parameters())

    def closure():
        opt.zero_grad()
        loss = (model(mt.ones(4, 2)) ** 2).mean()
        loss.backward()
        return loss

    opt.step(closure)
    assert all(p.dtype == mt.float32 and opt.state[0]["d"].dtype == np.float32 for p in model.parameters())


def test_lbfgs_returns_at_once_where_the_gradient_is_already_small():
    w = mt.tensor([0.0], requires_grad=True)
    opt = optim.LBFGS([w])
    calls = []

    def closure():
        calls.append(1)
        opt.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        return loss

    assert float(opt.step(closure)) == 0.0 and len(calls) == 1 and w.item() == 0.0


def test_lbfgs_refuses_as_torch_does_and_names_what_it_lacks():
    w = nn.Linear(2, 1)
    with pytest.raises(ValueError, match="per-parameter options"):
        optim.LBFGS([{"params": [w.weight]}, {"params": [w.bias], "lr": 0.1}])
    with pytest.raises(ValueError, match="per-parameter options"):
        torch.optim.LBFGS([{"params": [torch.zeros(1, requires_grad=True)]},
                           {"params": [torch.zeros(1, requires_grad=True)], "lr": 0.1}])
    with pytest.raises(ValueError, match="Invalid learning rate"):
        optim.LBFGS(w.parameters(), lr=-1)
    with pytest.raises(ValueError, match="Invalid learning rate"):
        torch.optim.LBFGS([torch.zeros(1, requires_grad=True)], lr=-1)
    with pytest.raises(NotImplementedError, match="line_search_fn='strong_wolfe'"):
        optim.LBFGS(w.parameters(), line_search_fn="strong_wolfe")


def test_lbfgs_state_has_torchs_names_and_a_resumed_run_equals_an_uninterrupted_one():
    import io

    def run(lib, resume):
        model = lib.nn.Linear(3, 1).double()
        with lib.no_grad():
            model.weight.copy_(lib.tensor(W1[:1], dtype=lib.float64))
            model.bias.copy_(lib.tensor(B2, dtype=lib.float64))
        x, y = lib.tensor(X, dtype=lib.float64), lib.tensor(Y, dtype=lib.float64)
        opts = [lib.optim.LBFGS(model.parameters(), max_iter=3, history_size=2)]

        def closure():
            opts[0].zero_grad()
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            return loss

        opts[0].step(closure)
        keys = set(opts[0].state_dict()["state"][0])
        if resume:
            buffer = io.BytesIO()
            lib.save(opts[0].state_dict(), buffer)
            buffer.seek(0)
            opts[0] = lib.optim.LBFGS(model.parameters(), max_iter=3, history_size=2)
            opts[0].load_state_dict(lib.load(buffer))
        opts[0].step(closure)
        opts[0].step(closure)
        return model.weight.detach().numpy(), keys

    (straight, keys), (resumed, _) = run(mt, False), run(mt, True)
    np.testing.assert_array_equal(resumed, straight)
    theirs, their_keys = run(torch, False)
    assert keys == their_keys
    np.testing.assert_allclose(straight, theirs, rtol=1e-10)


def test_lbfgs_on_the_device_matches_the_cpu(device):
    results = []
    for where in ("cpu", device):
        model = nn.Linear(3, 1)
        with mt.no_grad():
            model.weight.copy_(mt.tensor(W2[:, :3]))
            model.bias.copy_(mt.tensor(B2))
        model.to(where)
        x, y = mt.tensor(X, device=where), mt.tensor(Y, device=where)
        opt = optim.LBFGS(model.parameters(), max_iter=5)

        def closure():
            opt.zero_grad()
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            return loss

        opt.step(closure)
        results.append(model.weight.to("cpu").detach().numpy())
    np.testing.assert_allclose(results[1], results[0], rtol=1e-5, atol=1e-6)


# ----- Tensor.norm / torch.norm (the autograd tutorial's `while y.norm() < 1000`) -----
@pytest.mark.parametrize("p, dim, keepdim", [("fro", None, False), (2, 1, False), (2, (0, 2), True), (1, None, False),
                                             (1, -1, True), (float("inf"), 0, False), (-float("inf"), None, False),
                                             (0, 1, False), (3, None, False), (0.5, 2, True)])
def test_norm_values_dtypes_and_gradients_follow_torch(p, dim, keepdim):
    a = RNG.standard_normal((3, 4, 2))
    a[0, 1, 0] = 0.0
    for dtype, tdtype, rtol in ((mt.float64, torch.float64, 1e-10), (mt.float32, torch.float32, 1e-5)):
        x, tx = mt.tensor(a, dtype=dtype, requires_grad=True), torch.tensor(a, dtype=tdtype, requires_grad=True)
        ours, theirs = x.norm(p, dim, keepdim), tx.norm(p, dim, keepdim)
        assert ours.shape == tuple(theirs.shape) and str(ours.dtype) == str(theirs.dtype).replace("torch.", "")
        np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=rtol)
        if p == 0 or p == 0.5:   # (0: no gradient in PyTorch either; 0.5: |x|^0.5 has none at the zero above)
            continue
        w = RNG.standard_normal(tuple(theirs.shape))
        (ours * mt.tensor(w, dtype=dtype)).sum().backward()
        (theirs * torch.tensor(w, dtype=tdtype)).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=rtol * 10, atol=1e-12 if rtol < 1e-6 else 1e-6)


def test_the_2_norm_of_zeros_has_gradient_zero_as_torchs():
    x, tx = mt.zeros(2, 3, requires_grad=True), torch.zeros(2, 3, requires_grad=True)
    x.norm(dim=1).sum().backward()
    tx.norm(dim=1).sum().backward()
    assert x.grad.tolist() == tx.grad.tolist() == [[0.0] * 3] * 2
    y = mt.tensor([[3.0, 4.0], [0.0, 0.0]], requires_grad=True)
    mt.norm(y, dim=1).sum().backward()
    np.testing.assert_allclose(y.grad.numpy(), [[0.6, 0.8], [0.0, 0.0]], rtol=1e-6)


def test_torch_norm_is_the_method_and_refuses_what_torch_refuses():
    a = RNG.standard_normal((2, 3))
    np.testing.assert_allclose(mt.norm(mt.tensor(a, dtype=mt.float64), p=2, dim=0).numpy(),
                               torch.norm(torch.tensor(a), p=2, dim=0).numpy(), rtol=1e-12)
    with pytest.raises(RuntimeError, match="floating point"):
        torch.tensor([1, 2]).norm()
    with pytest.raises(RuntimeError, match="floating point"):
        mt.tensor([1, 2]).norm()
    with pytest.raises(RuntimeError, match="not supported"):
        torch.ones(3).norm(p="abc")
    with pytest.raises(RuntimeError, match="not supported"):
        mt.ones(3).norm(p="abc")
