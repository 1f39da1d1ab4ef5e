"""optim.lr_scheduler: each schedule against its formula written here, and number for number against
torch.optim.lr_scheduler where PyTorch is installed (the learning rates, OneCycleLR's momentum, resuming)."""
import math

import numpy as np
import pytest

import minitorch as mt
from minitorch import optim
from minitorch.optim import lr_scheduler as sched

LR = 0.1


def sgd(momentum=0.0, lr=LR):
    return optim.SGD([mt.zeros(2, requires_grad=True)], lr=lr, momentum=momentum)


def lrs(scheduler, steps):
    """The lr after construction and after each of `steps` steps."""
    out = [scheduler.optimizer.lr]
    for _ in range(steps):
        scheduler.optimizer.step()
        scheduler.step()
        out.append(scheduler.optimizer.lr)
        assert scheduler.get_last_lr() == [scheduler.optimizer.lr]
    return np.array(out)


def one_cycle_np(t, total, max_lr, pct, div=25.0, final_div=1e4, linear=False):
    """The two-phase 1cycle lr at step t, from the formula."""
    initial, peak_step = max_lr / div, pct * total - 1
    low = initial / final_div

    def anneal(a, b, f):
        return (b - a) * f + a if linear else b + (a - b) / 2 * (1 + math.cos(math.pi * f))
    if t <= peak_step:
        return anneal(initial, max_lr, t / peak_step)
    return anneal(max_lr, low, (t - peak_step) / (total - 1 - peak_step))


FORMULAS = {
    "LambdaLR": (lambda o: sched.LambdaLR(o, lambda e: 0.95 ** e + 1 / (e + 1)),
                 lambda t: LR * (0.95 ** t + 1 / (t + 1))),
    "StepLR": (lambda o: sched.StepLR(o, step_size=3, gamma=0.5), lambda t: LR * 0.5 ** (t // 3)),
    "ExponentialLR": (lambda o: sched.ExponentialLR(o, gamma=0.9), lambda t: LR * 0.9 ** t),
    "CosineAnnealingLR": (lambda o: sched.CosineAnnealingLR(o, T_max=7, eta_min=0.01),
                          lambda t: 0.01 + (LR - 0.01) * (1 + math.cos(math.pi * t / 7)) / 2),
    "OneCycleLR": (lambda o: sched.OneCycleLR(o, max_lr=1.0, total_steps=20, pct_start=0.25),
                   lambda t: one_cycle_np(t, 20, 1.0, 0.25)),
    "OneCycleLR (linear)": (lambda o: sched.OneCycleLR(o, max_lr=1.0, total_steps=20, anneal_strategy="linear",
                                                       cycle_momentum=False),
                            lambda t: one_cycle_np(t, 20, 1.0, 0.3, linear=True)),
}


@pytest.mark.parametrize("name", list(FORMULAS))
def test_each_schedule_follows_its_formula(name):
    make, formula = FORMULAS[name]
    got = lrs(make(sgd(momentum=0.9)), 20)   # cosine: past T_max it rises again (periodic, as PyTorch's)
    np.testing.assert_allclose(got, [formula(t) for t in range(21)], rtol=1e-9, atol=1e-15)


def test_one_cycle_refuses_a_step_past_total_steps_and_cycles_adam_beta1():
    opt = optim.Adam([mt.zeros(2, requires_grad=True)], betas=(0.9, 0.99))
    s = sched.OneCycleLR(opt, max_lr=0.5, epochs=2, steps_per_epoch=3, three_phase=True)
    assert opt.hyper["betas"] == (0.95, 0.99)   # max_momentum at the start, beta2 kept
    for _ in range(6):
        s.step()
    with pytest.raises(ValueError, match="tried to step 7 times; total_steps is 6"):
        s.step()
    with pytest.raises(ValueError, match="cycle_momentum=True needs an optimizer with momentum"):
        sched.OneCycleLR(sgd(momentum=0.0), max_lr=1.0, total_steps=5)
    with pytest.raises(ValueError, match="give total_steps, or epochs and steps_per_epoch"):
        sched.OneCycleLR(sgd(0.9), max_lr=1.0)


def test_state_dict_resumes_where_the_schedule_stopped():
    a_opt = sgd(0.9)
    a = sched.CosineAnnealingLR(a_opt, T_max=5)
    lrs(a, 3)
    b_opt = sgd(0.9, lr=0.5)
    b = sched.CosineAnnealingLR(b_opt, T_max=99)
    b_opt.load_state_dict(a_opt.state_dict())
    b.load_state_dict(a.state_dict())
    assert "optimizer" not in a.state_dict() and b.T_max == 5
    np.testing.assert_array_equal(lrs(b, 6), lrs(a, 6))
    assert "lr_lambda" not in sched.LambdaLR(sgd(), lambda e: 1.0).state_dict()   # a function is not state


def test_last_epoch_resumes_only_an_optimizer_that_a_schedule_ran_on():
    with pytest.raises(KeyError, match="no initial_lr"):
        sched.StepLR(sgd(), step_size=2, last_epoch=3)
    first = sgd()
    a = sched.StepLR(first, step_size=2, gamma=0.5)
    lrs(a, 3)
    resumed = sgd(lr=0.7)
    resumed.load_state_dict(first.state_dict())   # carries initial_lr, as PyTorch's param_groups do
    b = sched.StepLR(resumed, step_size=2, gamma=0.5, last_epoch=3)   # constructed at epoch 4, as a's next step
    np.testing.assert_array_equal(lrs(b, 3), lrs(a, 4)[1:])   # epochs 4 to 7
    assert resumed.initial_lr == LR


def test_bad_arguments_name_themselves():
    with pytest.raises(ValueError, match="step_size must be a positive int"):
        sched.StepLR(sgd(), step_size=0)
    with pytest.raises(ValueError, match="T_max must be > 0"):
        sched.CosineAnnealingLR(sgd(), T_max=0)
    with pytest.raises(TypeError, match="lr_lambda must be a function"):
        sched.LambdaLR(sgd(), 0.5)


def torch_pair(torch, make_ours, make_theirs, momentum=0.9, lr=LR):
    p = torch.zeros(2, requires_grad=True)
    theirs_opt = torch.optim.SGD([p], lr=lr, momentum=momentum)
    return make_ours(sgd(momentum, lr)), make_theirs(theirs_opt), theirs_opt


PAIRS = {
    "LambdaLR": (lambda o: sched.LambdaLR(o, lambda e: 1 / (1 + e)),
                 lambda o, S: S.LambdaLR(o, lambda e: 1 / (1 + e))),
    "StepLR": (lambda o: sched.StepLR(o, 4, gamma=0.3), lambda o, S: S.StepLR(o, 4, gamma=0.3)),
    "ExponentialLR": (lambda o: sched.ExponentialLR(o, 0.8), lambda o, S: S.ExponentialLR(o, 0.8)),
    "CosineAnnealingLR": (lambda o: sched.CosineAnnealingLR(o, 6, eta_min=0.003),
                          lambda o, S: S.CosineAnnealingLR(o, 6, eta_min=0.003)),
    "OneCycleLR": (lambda o: sched.OneCycleLR(o, 0.7, total_steps=25, pct_start=0.4),
                   lambda o, S: S.OneCycleLR(o, 0.7, total_steps=25, pct_start=0.4)),
    "OneCycleLR (three phases, linear)": (
        lambda o: sched.OneCycleLR(o, 0.7, epochs=5, steps_per_epoch=5, three_phase=True, anneal_strategy="linear",
                                   div_factor=10.0, final_div_factor=100.0),
        lambda o, S: S.OneCycleLR(o, 0.7, epochs=5, steps_per_epoch=5, three_phase=True, anneal_strategy="linear",
                                  div_factor=10.0, final_div_factor=100.0)),
}


@pytest.mark.parametrize("name", list(PAIRS))
def test_schedules_match_pytorch_number_for_number(name):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed: the comparison with it is skipped")
    make_ours, make_theirs = PAIRS[name]
    ours, theirs, theirs_opt = torch_pair(torch, make_ours, lambda o: make_theirs(o, torch.optim.lr_scheduler))
    for _ in range(25):   # (OneCycleLR: total_steps steps; cosine: past T_max, where it rises again)
        assert ours.get_last_lr() == pytest.approx(theirs.get_last_lr(), rel=1e-12, abs=0)
        assert ours.optimizer.hyper["momentum"] == pytest.approx(theirs_opt.param_groups[0]["momentum"], rel=1e-12)
        theirs_opt.step()
        theirs.step()
        ours.optimizer.step()
        ours.step()
    assert ours.last_epoch == theirs.last_epoch == 25


def test_resuming_with_last_epoch_matches_pytorch():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed: the comparison with it is skipped")
    S = torch.optim.lr_scheduler
    ours, theirs, theirs_opt = torch_pair(torch, lambda o: sched.ExponentialLR(o, 0.5),
                                          lambda o: S.ExponentialLR(o, 0.5))
    for make_ours, make_theirs in [(lambda o: sched.CosineAnnealingLR(o, 10, last_epoch=3),
                                    lambda o: S.CosineAnnealingLR(o, 10, last_epoch=3)),
                                   (lambda o: sched.StepLR(o, 2, gamma=0.1, last_epoch=5),
                                    lambda o: S.StepLR(o, 2, gamma=0.1, last_epoch=5))]:
        a, b = make_ours(ours.optimizer), make_theirs(theirs_opt)
        for _ in range(6):
            assert a.get_last_lr() == pytest.approx(b.get_last_lr(), rel=1e-12, abs=0)
            theirs_opt.step()
            a.step()
            b.step()
