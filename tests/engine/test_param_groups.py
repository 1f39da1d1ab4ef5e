"""Parameter groups as PyTorch's: groups given as dicts with their own options, param_groups read and written by
user code and by every schedule, add_param_group, state_dict in PyTorch's layout (and the older layout loading),
and over flat buffers one kernel per run of parameters with equal options. RMSprop and Adagrad against their rules
written out here, and every optimizer against torch.optim where PyTorch is installed."""
import numpy as np
import pytest

import minitorch as mt
from minitorch import nn, optim
from minitorch.nn.utils import FlatParameters
from minitorch.optim import lr_scheduler as sched

RNG = np.random.default_rng(3)
SHAPES = [(3, 2), (4,), (2, 2), (5,)]
P0 = [RNG.standard_normal(s) for s in SHAPES]
C = [RNG.uniform(0.5, 2.0, s) for s in SHAPES]   # loss = sum(c * p^2 + d * p): grad = 2 c p + d
D = [RNG.standard_normal(s) for s in SHAPES]


def make_params():
    return [nn.Parameter(mt.tensor(p, dtype=np.float64)) for p in P0]


def backward_loss(params):
    loss = sum((p * p * mt.tensor(c, dtype=np.float64) + p * mt.tensor(d, dtype=np.float64)).sum()
               for p, c, d in zip(params, C, D))
    loss.backward()


def train(opt, params, steps, scheduler=None):
    for _ in range(steps):
        opt.zero_grad()
        backward_loss(params)
        opt.step()
        if scheduler is not None:
            scheduler.step()
    return [p.numpy().copy() for p in params]


def groups(params, **second):
    """Two groups: the first two parameters with the defaults, the others with options of their own."""
    return [{"params": params[:2]}, {"params": params[2:], **second}]


# ----- RMSprop and Adagrad, written out -----
def rmsprop_by_hand(lr, alpha, eps, wd, momentum, centered, steps):
    ps = [p.copy() for p in P0]
    sq, ga, buf = ([np.zeros(s) for s in SHAPES] for _ in range(3))
    for _ in range(steps):
        for i, (c, d) in enumerate(zip(C, D)):
            g = 2 * c * ps[i] + d + wd * ps[i]
            sq[i] = alpha * sq[i] + (1 - alpha) * g * g
            avg = sq[i]
            if centered:
                ga[i] = alpha * ga[i] + (1 - alpha) * g
                avg = sq[i] - ga[i] ** 2
            step = g / (np.sqrt(avg) + eps)
            if momentum:
                buf[i] = momentum * buf[i] + step
                step = buf[i]
            ps[i] = ps[i] - lr * step
    return ps


def adagrad_by_hand(lr, lr_decay, wd, init, eps, steps):
    ps = [p.copy() for p in P0]
    total = [np.full(s, init) for s in SHAPES]
    for t in range(1, steps + 1):
        for i, (c, d) in enumerate(zip(C, D)):
            g = 2 * c * ps[i] + d + wd * ps[i]
            total[i] = total[i] + g * g
            ps[i] = ps[i] - lr / (1 + (t - 1) * lr_decay) * g / (np.sqrt(total[i]) + eps)
    return ps


@pytest.mark.parametrize("kw", [{}, {"momentum": 0.9}, {"centered": True}, {"centered": True, "momentum": 0.5,
                                                                            "weight_decay": 0.1}])
@pytest.mark.parametrize("flat", [False, True])
def test_rmsprop_follows_its_rule(kw, flat):
    params = make_params()
    opt = optim.RMSprop(FlatParameters(params) if flat else params, lr=0.01, **kw)
    got = train(opt, params, 5)
    expected = rmsprop_by_hand(0.01, 0.99, 1e-8, kw.get("weight_decay", 0.0), kw.get("momentum", 0.0),
                               kw.get("centered", False), 5)
    for a, b in zip(got, expected):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("kw", [{}, {"lr_decay": 0.1, "weight_decay": 0.05, "initial_accumulator_value": 0.3}])
@pytest.mark.parametrize("flat", [False, True])
def test_adagrad_follows_its_rule(kw, flat):
    params = make_params()
    opt = optim.Adagrad(FlatParameters(params) if flat else params, lr=0.1, **kw)
    got = train(opt, params, 5)
    expected = adagrad_by_hand(0.1, kw.get("lr_decay", 0.0), kw.get("weight_decay", 0.0),
                               kw.get("initial_accumulator_value", 0.0), 1e-10, 5)
    for a, b in zip(got, expected):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


# ----- groups -----
def test_param_groups_hold_params_lr_and_every_hyperparameter():
    params = make_params()
    opt = optim.Adam(groups(params, lr=0.5, weight_decay=0.1), lr=0.01)
    assert [g["lr"] for g in opt.param_groups] == [0.01, 0.5]
    assert opt.param_groups[0]["params"] == params[:2] and opt.param_groups[1]["params"] == params[2:]
    assert opt.param_groups[0]["betas"] == (0.9, 0.999) and opt.param_groups[1]["weight_decay"] == 0.1
    assert opt.param_groups[0]["weight_decay"] == 0.0
    assert opt.defaults == {"lr": 0.01, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0.0}


@pytest.mark.parametrize("flat", [False, True])
def test_each_group_is_updated_with_its_own_options(flat):
    """Two groups of SGD with momentum step as two SGDs would, one over each group's parameters."""
    params = make_params()
    if flat:
        FlatParameters(params)   # the optimizer finds the buffer through the parameters' storage
    opt = optim.SGD(groups(params, lr=0.3, momentum=0.5), lr=0.05, momentum=0.9)
    got = train(opt, params, 4)
    a, b = make_params(), make_params()
    one, two = optim.SGD(a[:2], lr=0.05, momentum=0.9), optim.SGD(b[2:], lr=0.3, momentum=0.5)
    for _ in range(4):
        for o, ps in ((one, a), (two, b)):
            o.zero_grad()
            backward_loss(ps)
            o.step()
    for x, y in zip(got, [p.numpy() for p in a[:2] + b[2:]]):
        np.testing.assert_array_equal(x, y)


def test_writing_group_lr_changes_the_next_step():
    p = nn.Parameter(mt.zeros(2, dtype=np.float64))
    opt = optim.SGD([p], lr=1.0)
    for g in opt.param_groups:
        g["lr"] = 0.25
    p.grad = mt.tensor([1.0, -2.0], dtype=np.float64)
    opt.step()
    np.testing.assert_array_equal(p.numpy(), [-0.25, 0.5])
    assert opt.lr == 0.25


def test_add_param_group_and_its_errors():
    params = make_params()
    opt = optim.SGD(params[:2], lr=0.1)
    opt.add_param_group({"params": params[2:], "lr": 0.01})
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.01] and opt.param_groups[1]["momentum"] == 0.0
    train(opt, params, 1)
    assert all(not np.array_equal(p.numpy(), p0) for p, p0 in zip(params, P0))
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": [params[0]]})
    with pytest.raises(TypeError, match="iterable of tensors or dicts"):
        optim.SGD(params[0], lr=0.1)


def test_state_is_read_by_parameter_too():
    params = make_params()
    opt = optim.Adam(params)
    train(opt, params, 2)
    assert opt.state[params[1]] is opt.state[1] and opt.state[params[1]]["step"] == 2


@pytest.mark.parametrize("make", [lambda ps: optim.Adam(groups(ps, lr=0.1, weight_decay=0.2), lr=0.01),
                                  lambda ps: optim.SGD(groups(ps, momentum=0.5), lr=0.05, momentum=0.9),
                                  lambda ps: optim.RMSprop(groups(ps, centered=True), lr=0.01, momentum=0.9),
                                  lambda ps: optim.Adagrad(groups(ps, lr_decay=0.01), lr=0.1)])
@pytest.mark.parametrize("flat", [False, True])
def test_resuming_groups_from_a_saved_state_matches_uninterrupted_training(make, flat, tmp_path):
    params = make_params()
    uninterrupted = train(make(FlatParameters(params).params if flat else params), params, 6)
    params = make_params()
    opt = make(params)
    train(opt, params, 3)
    state = opt.state_dict()
    assert sorted(state) == ["param_groups", "state"] and sorted(state["state"]) == [0, 1, 2, 3]
    assert [g["params"] for g in state["param_groups"]] == [[0, 1], [2, 3]]
    mt.save({"params": [p.detach() for p in params], "optim": state}, tmp_path / "ckpt.npz")
    saved = mt.load(tmp_path / "ckpt.npz")
    resumed = [nn.Parameter(t) for t in saved["params"]]
    if flat:
        FlatParameters(resumed)
    opt2 = make(resumed)
    opt2.load_state_dict(saved["optim"])
    for a, b in zip(train(opt2, resumed, 3), uninterrupted):
        np.testing.assert_array_equal(a, b)


def test_load_state_dict_refuses_other_groups():
    params = make_params()
    state = optim.SGD(groups(params), lr=0.1).state_dict()
    with pytest.raises(ValueError, match="2 parameter groups, the optimizer has 1"):
        optim.SGD(make_params(), lr=0.1).load_state_dict(state)
    with pytest.raises(ValueError, match="holds 2 parameters in group 0, the optimizer has 1"):
        optim.SGD([{"params": params[:1]}, {"params": params[1:]}], lr=0.1).load_state_dict(state)


def test_a_checkpoint_written_before_groups_loads():
    """The layout of before: {"lr", "step", "hyper", "state": [one dict per parameter]}."""
    params = make_params()
    opt = optim.SGD(params, lr=0.05, momentum=0.9)
    train(opt, params, 2)
    old = {"lr": 0.05, "step": 2, "hyper": {"momentum": 0.9, "weight_decay": 0.0}, "initial_lr": 0.07,
           "state": [{"momentum_buffer": opt.state[i]["momentum_buffer"].copy()} for i in range(4)]}
    resumed = [nn.Parameter(p.detach().clone()) for p in params]
    opt2 = optim.SGD(resumed, lr=1.0)
    opt2.load_state_dict(old)
    assert opt2.lr == 0.05 and opt2.param_groups[0]["initial_lr"] == 0.07 and opt2.step_count == 2
    for a, b in zip(train(opt2, resumed, 2), train(opt, params, 2)):
        np.testing.assert_array_equal(a, b)


# ----- one kernel per run of equal options over flat buffers -----
def count_kernels(opt):
    calls = []
    update = opt.update

    def counted(p, g, state, t, group):
        calls.append(p.size)
        update(p, g, state, t, group)
    opt.update = counted
    return calls


def test_a_flat_step_is_one_kernel_per_run_of_equal_options():
    params = make_params()
    flat = FlatParameters(params)
    n = [p.numel() for p in params]
    opt = optim.AdamW([{"params": [params[0], params[1]]}, {"params": [params[2]], "weight_decay": 0.0},
                       {"params": [params[3]]}], lr=0.01)
    assert opt.flat is flat   # the FlatParameters whose parameters are all here: zero_grad and clipping use it
    calls = count_kernels(opt)
    train(opt, params, 1)
    assert calls == [n[0] + n[1], n[2], n[3]]   # the third group's options equal the first's, but not adjacent
    calls.clear()
    for g in opt.param_groups:
        g["weight_decay"] = 0.01
    train(opt, params, 1)
    assert calls == [sum(n)]   # equal options again: one kernel over the whole buffer


# ----- schedules over groups -----
def test_every_schedule_scales_each_group():
    params = make_params()
    opt = optim.SGD(groups(params, lr=1.0), lr=0.1)
    s = sched.StepLR(opt, step_size=2, gamma=0.5)
    lrs = []
    for _ in range(4):
        train(opt, params, 1)
        s.step()
        lrs.append(s.get_last_lr())
    assert lrs == [[0.1, 1.0], [0.05, 0.5], [0.05, 0.5], [0.025, 0.25]]
    assert [g["initial_lr"] for g in opt.param_groups] == [0.1, 1.0]
    lam = sched.LambdaLR(optim.SGD(groups(make_params(), lr=1.0), lr=0.1), [lambda e: 1.0, lambda e: 0.5 ** e])
    lam.step()
    assert lam.get_last_lr() == [0.1, 0.5]


# ----- against PyTorch -----
TORCH_MAKERS = {
    "SGD": lambda o, ps: o.SGD(groups(ps, lr=0.2, momentum=0.5), lr=0.05, momentum=0.9, weight_decay=0.01),
    "Adam": lambda o, ps: o.Adam(groups(ps, lr=0.05, weight_decay=0.1), lr=0.01, betas=(0.8, 0.95)),
    "AdamW": lambda o, ps: o.AdamW(groups(ps, weight_decay=0.0), lr=0.01),
    "RMSprop": lambda o, ps: o.RMSprop(groups(ps, centered=True, momentum=0.5), lr=0.01, weight_decay=0.01),
    "Adagrad": lambda o, ps: o.Adagrad(groups(ps, lr_decay=0.1, initial_accumulator_value=0.2), lr=0.1),
    "Adadelta": lambda o, ps: o.Adadelta(groups(ps, rho=0.8, maximize=True), lr=0.5, weight_decay=0.01),
    "Adamax": lambda o, ps: o.Adamax(groups(ps, betas=(0.8, 0.9), weight_decay=0.1), lr=0.02),
}


@pytest.mark.parametrize("name", list(TORCH_MAKERS))
def test_groups_and_schedule_match_pytorch(name):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed: the comparison with it is skipped")
    ours = make_params()
    theirs = [torch.tensor(p, requires_grad=True) for p in P0]
    opts = (TORCH_MAKERS[name](optim, ours), TORCH_MAKERS[name](torch.optim, theirs))
    scheds = (sched.LambdaLR(opts[0], lambda e: 0.9 ** e), torch.optim.lr_scheduler.LambdaLR(opts[1],
                                                                                             lambda e: 0.9 ** e))
    for _ in range(6):
        train(opts[0], ours, 1, scheds[0])
        opts[1].zero_grad()
        sum((p * p * torch.tensor(c) + p * torch.tensor(d)).sum() for p, c, d in zip(theirs, C, D)).backward()
        opts[1].step()
        scheds[1].step()
        assert scheds[0].get_last_lr() == pytest.approx(scheds[1].get_last_lr(), rel=1e-15)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=1e-10, atol=1e-12)
    # the state_dict layout: the same structure, and the same state names and values
    mine, yours = opts[0].state_dict(), opts[1].state_dict()
    assert sorted(mine) == sorted(yours) and sorted(mine["state"]) == sorted(yours["state"])
    for g_ours, g_theirs in zip(mine["param_groups"], yours["param_groups"]):
        assert g_ours["params"] == g_theirs["params"] and set(g_ours) <= set(g_theirs)
        assert all(g_ours[k] == pytest.approx(g_theirs[k]) for k in g_ours if k != "params")
    for i, s in mine["state"].items():
        assert set(s) == {k for k, v in yours["state"][i].items() if v is not None}
        for k, v in s.items():
            np.testing.assert_allclose(np.asarray(v), yours["state"][i][k].detach().numpy(), rtol=1e-10, atol=1e-12)


# ----- on the device (a GPU, or in CI the CuPy stand-in, which runs the fused kernels under CuPy's rules) -----
@pytest.mark.parametrize("make", [lambda ps: optim.RMSprop(groups(ps, centered=True, momentum=0.5), lr=0.01),
                                  lambda ps: optim.RMSprop(groups(ps, momentum=0.9), lr=0.01),
                                  lambda ps: optim.Adagrad(groups(ps, lr_decay=0.1), lr=0.1, weight_decay=0.1),
                                  lambda ps: optim.AdamW(groups(ps, weight_decay=0.0), lr=0.01)])
def test_groups_over_flat_buffers_on_the_device_match_the_cpu(make, device):
    def run_on(where):
        params = [nn.Parameter(mt.tensor(p, dtype=np.float64, device=where)) for p in P0]
        flat = FlatParameters(params)   # the optimizer finds the buffer through the parameters
        opt = make(params)
        assert opt.flat is flat
        for _ in range(4):
            opt.zero_grad()
            for p, c, d in zip(params, C, D):   # the gradient 2 c p + d, set directly
                p.grad = p.detach() * mt.tensor(2 * c, dtype=np.float64, device=where) + mt.tensor(
                    d, dtype=np.float64, device=where)
            opt.step()
        return [p.numpy() for p in params]
    for a, b in zip(run_on(device), run_on("cpu")):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
