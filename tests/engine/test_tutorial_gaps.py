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
