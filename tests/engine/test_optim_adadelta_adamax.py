"""optim.Adadelta and optim.Adamax: against their update rules written out here, against torch.optim over several
steps (lr, rho / betas, eps, weight decay, maximize; float64 and float32; plain tensors and flat buffers), state_dict
round trips (resumed training equals uninterrupted), PyTorch's errors, and the device kernels against the CPU."""
import io

import numpy as np
import pytest
from conftest import requires_standin

import minitorch as mt
from minitorch import nn, optim
from minitorch.nn.utils import FlatParameters

RNG = np.random.default_rng(21)
SHAPES = [(3, 2), (4,), (2, 2)]
P0 = [RNG.standard_normal(s) for s in SHAPES]
C = [RNG.uniform(0.5, 2.0, s) for s in SHAPES]   # loss = sum(c * p^2 + d * p): grad = 2 c p + d
D = [RNG.standard_normal(s) for s in SHAPES]


def adadelta_by_hand(steps, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0.0, maximize=False):
    """Zeiler (2012), Algorithm 1, with PyTorch's lr, weight decay and maximize."""
    ps = [p.copy() for p in P0]
    sq, acc = [np.zeros(s) for s in SHAPES], [np.zeros(s) for s in SHAPES]
    for _ in range(steps):
        for i, (c, d) in enumerate(zip(C, D)):
            g = 2 * c * ps[i] + d
            g = (-g if maximize else g) + weight_decay * ps[i]
            sq[i] = rho * sq[i] + (1 - rho) * g * g
            delta = np.sqrt(acc[i] + eps) / np.sqrt(sq[i] + eps) * g
            acc[i] = rho * acc[i] + (1 - rho) * delta * delta
            ps[i] = ps[i] - lr * delta
    return ps


def adamax_by_hand(steps, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, maximize=False):
    """Kingma & Ba (2015), Algorithm 2, with PyTorch's eps inside the max, weight decay and maximize."""
    b1, b2 = betas
    ps = [p.copy() for p in P0]
    m, u = [np.zeros(s) for s in SHAPES], [np.zeros(s) for s in SHAPES]
    for t in range(1, steps + 1):
        for i, (c, d) in enumerate(zip(C, D)):
            g = 2 * c * ps[i] + d
            g = (-g if maximize else g) + weight_decay * ps[i]
            m[i] = b1 * m[i] + (1 - b1) * g
            u[i] = np.maximum(b2 * u[i], np.abs(g) + eps)
            ps[i] = ps[i] - lr / (1 - b1 ** t) * m[i] / u[i]
    return ps


def make_params(device="cpu", dtype=np.float64):
    return [nn.Parameter(mt.tensor(p, dtype=dtype, device=device)) for p in P0]


def train(opt, params, steps):
    device, dtype = params[0].device, params[0].dtype
    for _ in range(steps):
        opt.zero_grad()
        sum((p * p * mt.tensor(c, dtype=dtype, device=device) + p * mt.tensor(d, dtype=dtype, device=device)).sum()
            for p, c, d in zip(params, C, D)).backward()
        opt.step()
    return [p.numpy().copy() for p in params]


OPTIONS = {
    "Adadelta": [dict(), dict(lr=0.5, rho=0.8, eps=1e-4), dict(weight_decay=0.1), dict(maximize=True),
                 dict(lr=0.3, rho=0.95, weight_decay=0.05, maximize=True)],
    "Adamax": [dict(), dict(lr=0.05, betas=(0.8, 0.9), eps=1e-3), dict(lr=0.01, weight_decay=0.1),
               dict(lr=0.02, maximize=True), dict(lr=0.03, betas=(0.5, 0.99), weight_decay=0.02, maximize=True)],
}
BY_HAND = {"Adadelta": adadelta_by_hand, "Adamax": adamax_by_hand}
CASES = [(name, kw) for name, kws in OPTIONS.items() for kw in kws]
IDS = [f"{name}-{','.join(kw) or 'defaults'}" for name, kw in CASES]


@pytest.mark.parametrize("name, kw", CASES, ids=IDS)
@pytest.mark.parametrize("flat", [False, True])
def test_follows_its_update_rule(name, kw, flat):
    params = make_params()
    opt = getattr(optim, name)(FlatParameters(params) if flat else params, **kw)
    for got, expected in zip(train(opt, params, steps=7), BY_HAND[name](7, **kw)):
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name, kw", CASES, ids=IDS)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_matches_torch_over_several_steps(name, kw, dtype):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed: the comparison with it is skipped")
    ours = make_params(dtype=dtype)
    theirs = [torch.tensor(p.astype(dtype), requires_grad=True) for p in P0]
    opts = getattr(optim, name)(ours, **kw), getattr(torch.optim, name)(theirs, **kw)
    train(opts[0], ours, steps=8)
    for _ in range(8):
        opts[1].zero_grad()
        sum((p * p * torch.tensor(c.astype(dtype)) + p * torch.tensor(d.astype(dtype))).sum()
            for p, c, d in zip(theirs, C, D)).backward()
        opts[1].step()
    tol = dict(rtol=1e-10, atol=1e-12) if dtype == "float64" else dict(rtol=2e-5, atol=1e-6)
    for a, b in zip(ours, theirs):
        assert a.dtype == np.dtype(dtype)
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), **tol)
    mine, yours = opts[0].state_dict(), opts[1].state_dict()
    for i, s in mine["state"].items():
        assert set(s) == set(yours["state"][i])
        for k, v in s.items():
            np.testing.assert_allclose(np.asarray(v), yours["state"][i][k].detach().numpy(), **tol)
    for g_ours, g_theirs in zip(mine["param_groups"], yours["param_groups"]):
        assert all(g_ours[k] == pytest.approx(g_theirs[k]) for k in g_ours if k != "params")


@pytest.mark.parametrize("name", list(OPTIONS))
def test_resuming_from_a_saved_state_matches_uninterrupted_training(name):
    kw = OPTIONS[name][-1]
    params = make_params()
    uninterrupted = train(getattr(optim, name)(params, **kw), params, steps=6)
    params = make_params()
    opt = getattr(optim, name)(params, **kw)
    train(opt, params, steps=3)
    buffer = io.BytesIO()
    mt.save({"params": [p.detach() for p in params], "optim": opt.state_dict()}, buffer)
    buffer.seek(0)
    saved = mt.load(buffer)
    resumed = [nn.Parameter(t) for t in saved["params"]]
    opt2 = getattr(optim, name)(FlatParameters(resumed), **OPTIONS[name][0])   # options come from the state
    opt2.load_state_dict(saved["optim"])
    assert opt2.param_groups[0]["maximize"] is True
    for a, b in zip(train(opt2, resumed, steps=3), uninterrupted):
        np.testing.assert_array_equal(a, b)


def test_errors_as_torch():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed: the comparison with it is skipped")
    cases = [("Adadelta", dict(lr=-1.0)), ("Adadelta", dict(rho=1.5)), ("Adadelta", dict(eps=-1.0)),
             ("Adadelta", dict(weight_decay=-0.1)), ("Adamax", dict(lr=-0.1)), ("Adamax", dict(betas=(1.0, 0.9))),
             ("Adamax", dict(betas=(0.9, -0.1))), ("Adamax", dict(eps=-1e-8)), ("Adamax", dict(weight_decay=-1.0))]
    for name, kw in cases:
        with pytest.raises(ValueError) as theirs:
            getattr(torch.optim, name)([torch.zeros(2, requires_grad=True)], **kw)
        with pytest.raises(ValueError, match=str(theirs.value).replace("(", r"\(").replace(")", r"\)")):
            getattr(optim, name)(make_params(), **kw)


@pytest.mark.parametrize("name, kw", [CASES[1], CASES[4], CASES[6], CASES[9]], ids=[IDS[1], IDS[4], IDS[6], IDS[9]])
@pytest.mark.parametrize("flat", [False, True])
def test_the_device_kernel_matches_the_cpu(name, kw, flat, device):
    """The fused update (one cupy.fuse kernel on the GPU; the stand-in runs it under CuPy's rules) gives what NumPy
    gives; no value is read back to the host in the step (the scalars are computed from the options and t)."""
    def run_on(where):
        params = make_params(where)
        return train(getattr(optim, name)(FlatParameters(params) if flat else params, **kw), params, steps=5)
    for a, b in zip(run_on(device), run_on("cpu")):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


@requires_standin
@pytest.mark.parametrize("name", list(OPTIONS))
def test_a_step_over_flat_buffers_is_one_kernel_and_reads_nothing_back(name):
    """On the stand-in: the step launches the one fused update (the buffers' moves are none: all live on the device)
    and no device-to-host read (cupyx.allow_synchronize(False) would raise at one)."""
    import cupy
    import cupyx
    params = make_params("cuda")
    opt = getattr(optim, name)(FlatParameters(params), **OPTIONS[name][-1])
    for _ in range(2):   # the second step: the state exists
        opt.zero_grad()
        sum((p * p).sum() for p in params).backward()
        for buffer in opt.flat_buffers:
            buffer.settle()   # (gathers the gradients: the step's own work is what is counted)
        with cupy._standin.count_launches() as n, cupyx.allow_synchronize(False):
            opt.step()
    assert dict(n) == {"fused": 1}, dict(n)
