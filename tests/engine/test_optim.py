"""optim: SGD (momentum), Adam, AdamW against their update rules written out here, state_dict, the warmup schedule."""
import math

import numpy as np
import pytest

import minitorch as mt
from minitorch import nn, optim

SHAPES = [(3, 2), (4,)]
RNG = np.random.default_rng(0)
C = [RNG.uniform(0.5, 2.0, s) for s in SHAPES]   # loss = sum(c * p^2 + d * p), so grad = 2 c p + d
D = [RNG.standard_normal(s) for s in SHAPES]
P0 = [RNG.standard_normal(s) for s in SHAPES]


def make_params(device="cpu"):
    return [nn.Parameter(mt.tensor(p, dtype=np.float64, device=device)) for p in P0]


def backward_loss(params):
    device = params[0].device
    loss = sum(((p * p * mt.tensor(c, dtype=np.float64, device=device)) +
                p * mt.tensor(d, dtype=np.float64, device=device)).sum() for p, c, d in zip(params, C, D))
    loss.backward()


def train(opt, params, steps):
    for _ in range(steps):
        opt.zero_grad()
        backward_loss(params)
        opt.step()
    return [p.numpy().copy() for p in params]


def grad_by_hand(p, c, d):
    return 2 * c * p + d


# ----- the update rules, written out -----
def sgd_by_hand(lr, momentum, weight_decay, steps, dampening=0.0, nesterov=False):
    """PyTorch's documented SGD: buf = g at the first step, then momentum buf + (1 - dampening) g; Nesterov steps by
    g + momentum buf."""
    ps, bufs = [p.copy() for p in P0], [None] * len(P0)
    for _ in range(steps):
        for i, (c, d) in enumerate(zip(C, D)):
            g = grad_by_hand(ps[i], c, d) + weight_decay * ps[i]
            if momentum:
                bufs[i] = g.copy() if bufs[i] is None else momentum * bufs[i] + (1 - dampening) * g
                g = g + momentum * bufs[i] if nesterov else bufs[i]
            ps[i] = ps[i] - lr * g
    return ps


def adam_by_hand(lr, b1, b2, eps, weight_decay, decoupled, steps):
    """Kingma & Ba, Algorithm 1; L2 weight decay adds wd p to g, decoupled (AdamW) shrinks p by (1 - lr wd) first."""
    ps = [p.copy() for p in P0]
    ms, vs = [np.zeros(s) for s in SHAPES], [np.zeros(s) for s in SHAPES]
    for t in range(1, steps + 1):
        for i, (c, d) in enumerate(zip(C, D)):
            g = grad_by_hand(ps[i], c, d)
            if decoupled:
                ps[i] = ps[i] * (1 - lr * weight_decay)
            else:
                g = g + weight_decay * ps[i]
            ms[i] = b1 * ms[i] + (1 - b1) * g
            vs[i] = b2 * vs[i] + (1 - b2) * g * g
            m_hat, v_hat = ms[i] / (1 - b1 ** t), vs[i] / (1 - b2 ** t)
            ps[i] = ps[i] - lr * m_hat / (np.sqrt(v_hat) + eps)
    return ps


@pytest.mark.parametrize("lr, momentum, weight_decay", [(0.1, 0.0, 0.0), (0.05, 0.9, 0.0), (0.05, 0.8, 0.1)])
def test_sgd_follows_its_update_rule(lr, momentum, weight_decay):
    params = make_params()
    got = train(optim.SGD(params, lr=lr, momentum=momentum, weight_decay=weight_decay), params, steps=5)
    for a, b in zip(got, sgd_by_hand(lr, momentum, weight_decay, steps=5)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("dampening, nesterov", [(0.3, False), (0.0, True)])
def test_sgd_dampening_and_nesterov_follow_their_update_rule(dampening, nesterov):
    params = make_params()
    got = train(optim.SGD(params, lr=0.05, momentum=0.8, weight_decay=0.1, dampening=dampening, nesterov=nesterov),
                params, steps=5)
    for a, b in zip(got, sgd_by_hand(0.05, 0.8, 0.1, steps=5, dampening=dampening, nesterov=nesterov)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    assert optim.SGD(make_params(), lr=0.1).param_groups[0]["dampening"] == 0
    with pytest.raises(ValueError, match="Nesterov momentum requires a momentum and zero dampening"):
        optim.SGD(make_params(), lr=0.1, nesterov=True)


@pytest.mark.parametrize("cls, kwargs", [
    (optim.Adam, dict(lr=0.01)),
    (optim.Adam, dict(lr=0.02, betas=(0.9, 0.98), eps=1e-9)),
    (optim.Adam, dict(lr=0.01, weight_decay=0.1)),
    (optim.AdamW, dict(lr=0.01, weight_decay=0.1)),
    (optim.AdamW, dict(lr=0.01)),  # default weight_decay 1e-2
])
def test_adam_and_adamw_follow_their_update_rules(cls, kwargs):
    params = make_params()
    got = train(cls(params, **kwargs), params, steps=5)
    b1, b2 = kwargs.get("betas", (0.9, 0.999))
    wd = kwargs.get("weight_decay", 1e-2 if cls is optim.AdamW else 0.0)
    expected = adam_by_hand(kwargs["lr"], b1, b2, kwargs.get("eps", 1e-8), wd, cls is optim.AdamW, steps=5)
    for a, b in zip(got, expected):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_adam_bias_correction_counts_each_parameters_own_steps():
    """A parameter that first gets a gradient at step 3 takes the full first Adam step of size lr (t = 1 for it)."""
    a, b = nn.Parameter(mt.zeros(2, dtype=np.float64)), nn.Parameter(mt.zeros(2, dtype=np.float64))
    opt = optim.Adam([a, b], lr=0.1)
    for _ in range(2):
        a.grad = mt.ones(2, dtype=np.float64)
        opt.step()
    b.grad = mt.tensor([3.0, -0.5], dtype=np.float64)
    opt.step()
    # at t = 1: m_hat = g, v_hat = g^2, so the step is lr * g / (|g| + eps)
    np.testing.assert_allclose(b.numpy(), [-0.1 * 3 / (3 + 1e-8), 0.1 * 0.5 / (0.5 + 1e-8)], rtol=1e-12)


def test_parameters_without_gradient_are_left_alone():
    a, b = make_params()
    opt = optim.SGD([a, b], lr=0.1, momentum=0.9)
    a.grad = mt.ones(*a.shape, dtype=np.float64)
    opt.step()
    np.testing.assert_array_equal(b.numpy(), P0[1])
    np.testing.assert_allclose(a.numpy(), P0[0] - 0.1)


def test_zero_grad_clears_gradients():
    params = make_params()
    opt = optim.Adam(params)
    backward_loss(params)
    opt.zero_grad()
    assert all(p.grad is None for p in params)


def test_bad_arguments():
    with pytest.raises(ValueError, match="empty parameter list"):
        optim.SGD([], lr=0.1)
    with pytest.raises(ValueError, match="lr must be >= 0"):
        optim.Adam(make_params(), lr=-1.0)


# ----- state_dict -----
@pytest.mark.parametrize("make", [lambda p: optim.SGD(p, lr=0.05, momentum=0.9), lambda p: optim.Adam(p, lr=0.01),
                                  lambda p: optim.AdamW(p, lr=0.01, weight_decay=0.1)])
def test_resuming_from_a_saved_state_matches_uninterrupted_training(make, tmp_path):
    params = make_params()
    uninterrupted = train(make(params), params, steps=6)

    params = make_params()
    opt = make(params)
    train(opt, params, steps=3)
    mt.save({"params": [p.detach() for p in params], "optim": opt.state_dict()}, tmp_path / "ckpt.npz")
    saved = mt.load(tmp_path / "ckpt.npz")
    resumed = [nn.Parameter(t) for t in saved["params"]]
    opt2 = make(resumed)
    opt2.load_state_dict(saved["optim"])
    for a, b in zip(train(opt2, resumed, steps=3), uninterrupted):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("make", [lambda p: optim.SGD(p, lr=0.05, momentum=0.9), lambda p: optim.Adam(p, lr=0.01)])
def test_state_handed_over_in_memory_continues_on_the_device(make, device):
    params = make_params(device)
    uninterrupted = train(make(params), params, steps=6)
    params = make_params(device)
    opt = make(params)
    train(opt, params, steps=3)
    state = opt.state_dict()   # its arrays still on the device, as a trainer hands them over
    resumed = [nn.Parameter(p.detach()) for p in params]
    opt2 = make(resumed)
    opt2.load_state_dict(state)
    for new, old in zip(opt2.state, opt.state):   # copies: the old optimizer's steps cannot change the new one's
        assert all(new[k] is not old[k] for k in old if hasattr(old[k], "shape"))
    for a, b in zip(train(opt2, resumed, steps=3), uninterrupted):
        np.testing.assert_array_equal(a, b)


def test_load_state_dict_restores_lr_and_hyperparameters():
    params = make_params()
    opt = optim.Adam(params, lr=0.5, betas=(0.8, 0.9))
    other = optim.Adam(make_params(), lr=0.1)
    other.load_state_dict(opt.state_dict())
    assert other.lr == 0.5 and other.hyper["betas"] == (0.8, 0.9)


def test_load_state_dict_errors():
    params = make_params()
    opt = optim.Adam(params)
    train(opt, params, steps=1)
    state = opt.state_dict()
    with pytest.raises(ValueError, match="holds 2 parameters in group 0, the optimizer has 1"):
        optim.Adam(params[:1]).load_state_dict(state)
    swapped = optim.Adam([params[1], params[0]])
    with pytest.raises(ValueError, match=r"exp_avg.*parameter 0.*\(3, 2\).*\(4,\)"):
        swapped.load_state_dict(state)


# ----- the warmup schedule -----
def test_warmup_lr_formula():
    d_model, warmup, factor = 512, 4000, 2.0
    for step in [1, 10, 3999, 4000, 4001, 100_000]:
        expected = factor / math.sqrt(d_model) * min(1 / math.sqrt(step), step / warmup ** 1.5)
        assert optim.warmup_lr(step, d_model, warmup, factor) == pytest.approx(expected, rel=1e-12)


def test_warmup_schedule_sets_the_optimizer_lr_each_step():
    opt = optim.SGD(make_params(), lr=123.0)
    sched = optim.WarmupSchedule(opt, d_model=64, warmup=10)
    lrs = [opt.lr]
    for _ in range(30):
        sched.step()
        lrs.append(opt.lr)
    assert lrs == [pytest.approx(optim.warmup_lr(k, 64, 10)) for k in range(1, 32)]
    assert max(lrs) == pytest.approx(64 ** -0.5 * 10 ** -0.5) and int(np.argmax(lrs)) == 9  # the peak at step 10
    assert all(a < b for a, b in zip(lrs[:9], lrs[1:10])) and all(a > b for a, b in zip(lrs[9:], lrs[10:]))


def test_each_step_uses_the_learning_rate_the_schedule_set():
    """SGD without momentum moves p by -lr g, with the lr of the schedule at that step (read when step() runs)."""
    p = nn.Parameter(mt.zeros(2, dtype=np.float64))
    opt = optim.SGD([p], lr=123.0)
    sched = optim.WarmupSchedule(opt, d_model=64, warmup=10)
    expected = np.zeros(2)
    for k in range(1, 6):
        p.grad = mt.tensor([1.0, -2.0], dtype=np.float64)
        opt.step()
        expected -= optim.warmup_lr(k, 64, 10) * np.array([1.0, -2.0])
        sched.step()
        np.testing.assert_allclose(p.numpy(), expected, rtol=1e-12)


def test_warmup_schedule_state_round_trip_and_errors():
    opt = optim.SGD(make_params(), lr=0.0)
    sched = optim.WarmupSchedule(opt, d_model=32, warmup=5, factor=3.0)
    for _ in range(7):
        sched.step()
    opt2 = optim.SGD(make_params(), lr=0.0)
    sched2 = optim.WarmupSchedule(opt2, d_model=1, warmup=1)
    sched2.load_state_dict(sched.state_dict())
    assert opt2.lr == opt.lr and sched2.step() == sched.step()
    with pytest.raises(ValueError, match="warmup must be > 0"):
        optim.WarmupSchedule(opt, d_model=32, warmup=0)


def test_the_warmup_schedule_is_an_lr_scheduler_like_the_others():
    """One scheduler protocol: step(), get_last_lr() (one lr per parameter group), last_epoch, state_dict()."""
    a, b = make_params(), make_params()
    opt = optim.SGD([{"params": a}, {"params": b, "lr": 5.0}], lr=1.0)
    sched = optim.WarmupSchedule(opt, d_model=16, warmup=4)
    assert isinstance(sched, optim.lr_scheduler.LRScheduler) and sched.last_epoch == 0
    for k in range(1, 6):
        sched.step()
        assert sched.last_epoch == k
        assert sched.get_last_lr() == [pytest.approx(optim.warmup_lr(k + 1, 16, 4))] * 2
        assert [g["lr"] for g in opt.param_groups] == sched.get_last_lr()
    again = optim.WarmupSchedule(optim.SGD(make_params(), lr=1.0), d_model=16, warmup=4)
    again.load_state_dict(sched.state_dict())
    assert again.last_epoch == 5 and again.get_last_lr() == sched.get_last_lr()[:1]


def test_an_optimizer_step_on_the_device(device):
    p = nn.Parameter(mt.tensor([1.0, -2.0], dtype=np.float64, device=device))
    opt = optim.AdamW([p], lr=0.1)
    (p * p).sum().backward()
    opt.step()
    assert p.device == device and opt.state[0]["exp_avg"] is not None
    # first step: p (1 - lr wd) - lr * sign(g)
    np.testing.assert_allclose(p.numpy(), np.array([1.0, -2.0]) * (1 - 0.1 * 0.01) - 0.1 * np.array([1.0, -1.0]),
                               rtol=1e-7)


@pytest.mark.parametrize("make", [
    lambda p: optim.SGD(p, lr=0.05), lambda p: optim.SGD(p, lr=0.05, momentum=0.9, weight_decay=0.01),
    lambda p: optim.Adam(p, lr=0.01), lambda p: optim.AdamW(p, lr=0.01, weight_decay=0.1),
    lambda p: optim.Adagrad(p, lr=0.1), lambda p: optim.RMSprop(p, lr=0.01),
    lambda p: optim.RMSprop(p, lr=0.01, momentum=0.9), lambda p: optim.RMSprop(p, lr=0.01, centered=True),
    lambda p: optim.RMSprop(p, lr=0.01, centered=True, momentum=0.5)],
    ids=["sgd", "sgd-momentum", "adam", "adamw", "adagrad", "rmsprop", "rmsprop-momentum", "rmsprop-centered",
         "rmsprop-centered-momentum"])
def test_each_update_kernel_on_the_device_matches_the_cpu(make, device):
    """Every optimizer's update (a fuse kernel each on the GPU) gives on the device what it gives on the CPU."""
    params = make_params()
    on_cpu = train(make(params), params, steps=4)
    params = make_params(device)
    for a, b in zip(train(make(params), params, steps=4), on_cpu):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
