"""torch.optim.lr_scheduler's everyday schedules: LambdaLR, StepLR, ExponentialLR, CosineAnnealingLR, OneCycleLR.

PyTorch's formulas and step() semantics, written as PyTorch computes them (the recursive forms included), so the
learning rates agree number for number: construction counts as step 0 and sets the optimizer's lr to the epoch-0
value; each step() then advances last_epoch by one and sets the lr for it. Every schedule reads and writes each
parameter group's group["lr"], so the lists (base_lrs, get_last_lr()) have one item per group, as PyTorch's.
"""
import math


class LRScheduler:
    """The base: subclasses give get_lr(), the learning rate of each parameter group for self.last_epoch from the
    current ones (PyTorch's "chainable" form)."""

    def __init__(self, optimizer, last_epoch=-1):
        if not hasattr(optimizer, "param_groups"):
            raise TypeError(f"{type(self).__name__}: optimizer must be an optimizer (with param_groups), got "
                            f"{type(optimizer).__name__}")
        self.optimizer = optimizer
        for i, group in enumerate(optimizer.param_groups):
            if last_epoch == -1:
                group.setdefault("initial_lr", group["lr"])   # (PyTorch's: a second schedule keeps the first's)
            elif "initial_lr" not in group:
                raise KeyError(f"{type(self).__name__}: last_epoch={last_epoch} resumes a schedule, but "
                               f"param_groups[{i}] has no initial_lr (set by the schedule that ran before)")
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._step_count = 0
        self._is_initial = True     # the constructor's step: it sets the lr for last_epoch without changing it
        self.step()
        self._is_initial = False

    def get_lr(self):
        raise NotImplementedError

    def _lrs(self):
        """The current lr of each group."""
        return [group["lr"] for group in self.optimizer.param_groups]

    def step(self):
        """Advance one epoch (or one batch, for OneCycleLR) and set each group's lr for it."""
        self._step_count += 1
        self.last_epoch += 1
        for group, lr in zip(self.optimizer.param_groups, self.get_lr()):
            group["lr"] = lr
        self._last_lr = self._lrs()

    def get_last_lr(self):
        """The learning rates the last step() set, one per parameter group."""
        return list(self._last_lr)

    def state_dict(self):
        """Everything but the optimizer (and LambdaLR's function, which is not data): for load_state_dict."""
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambda", "lr_lambdas")}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)


class LambdaLR(LRScheduler):
    """lr = initial lr * lr_lambda(epoch); lr_lambda a function, or a list of one per parameter group."""

    def __init__(self, optimizer, lr_lambda, last_epoch=-1):
        n = len(getattr(optimizer, "param_groups", [None]))
        lambdas = list(lr_lambda) if isinstance(lr_lambda, (list, tuple)) else [lr_lambda] * n
        if len(lambdas) != n:
            raise ValueError(f"LambdaLR: expected {n} lr_lambdas (one per parameter group), got {len(lambdas)}")
        for f in lambdas:
            if not callable(f):
                raise TypeError(f"LambdaLR: lr_lambda must be a function of the epoch, got {type(f).__name__}")
        self.lr_lambda, self.lr_lambdas = lr_lambda, lambdas
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        return [base * f(self.last_epoch) for base, f in zip(self.base_lrs, self.lr_lambdas)]


class StepLR(LRScheduler):
    """lr times gamma every step_size epochs."""

    def __init__(self, optimizer, step_size, gamma=0.1, last_epoch=-1):
        if not isinstance(step_size, int) or step_size <= 0:
            raise ValueError(f"StepLR: step_size must be a positive int, got {step_size!r}")
        self.step_size, self.gamma = step_size, gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return self._lrs()
        return [lr * self.gamma for lr in self._lrs()]


class ExponentialLR(LRScheduler):
    """lr times gamma every epoch."""

    def __init__(self, optimizer, gamma, last_epoch=-1):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        return [lr * (1 if self._is_initial else self.gamma) for lr in self._lrs()]


class CosineAnnealingLR(LRScheduler):
    """lr from the initial lr down to eta_min along half a cosine over T_max epochs (then back up, as PyTorch's:
    the schedule is periodic, not clamped). PyTorch's recursive form, step by step."""

    def __init__(self, optimizer, T_max, eta_min=0.0, last_epoch=-1):   # noqa: N803 (PyTorch's name)
        if T_max <= 0:
            raise ValueError(f"CosineAnnealingLR: T_max must be > 0, got {T_max!r}")
        self.T_max, self.eta_min = T_max, eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        t, T, low = self.last_epoch, self.T_max, self.eta_min
        if self._is_initial:
            return self._lrs()
        if self._step_count == 1 and t > 0:   # resumed at epoch t: the closed form
            return [low + (base - low) * (1 + math.cos(t * math.pi / T)) / 2 for base in self.base_lrs]
        if (t - 1 - T) % (2 * T) == 0:        # the bottom of the cosine, where the ratio below would divide by 0
            return [lr + (base - low) * (1 - math.cos(math.pi / T)) / 2 for lr, base in zip(self._lrs(),
                                                                                           self.base_lrs)]
        return [(1 + math.cos(math.pi * t / T)) / (1 + math.cos(math.pi * (t - 1) / T)) * (lr - low) + low
                for lr in self._lrs()]


class OneCycleLR(LRScheduler):
    """The 1cycle policy (Smith and Topin, 2018), stepped once per batch: lr rises from max_lr / div_factor to max_lr
    over the first pct_start of total_steps, then anneals to initial_lr / final_div_factor (three_phase: back down
    to the initial lr first). With cycle_momentum the momentum (SGD's, or Adam's beta1) moves the other way, between
    max_momentum and base_momentum. Stepping past total_steps is an error, as in PyTorch."""

    def __init__(self, optimizer, max_lr, total_steps=None, epochs=None, steps_per_epoch=None, pct_start=0.3,
                 anneal_strategy="cos", cycle_momentum=True, base_momentum=0.85, max_momentum=0.95, div_factor=25.0,
                 final_div_factor=1e4, three_phase=False, last_epoch=-1):
        if total_steps is not None:
            if not isinstance(total_steps, int) or total_steps <= 0:
                raise ValueError(f"OneCycleLR: total_steps must be a positive int, got {total_steps!r}")
            self.total_steps = total_steps
        elif epochs is not None and steps_per_epoch is not None:
            for name, v in (("epochs", epochs), ("steps_per_epoch", steps_per_epoch)):
                if not isinstance(v, int) or v <= 0:
                    raise ValueError(f"OneCycleLR: {name} must be a positive int, got {v!r}")
            self.total_steps = epochs * steps_per_epoch
        else:
            raise ValueError("OneCycleLR: give total_steps, or epochs and steps_per_epoch")
        if not isinstance(pct_start, (int, float)) or not 0 <= pct_start <= 1:
            raise ValueError(f"OneCycleLR: pct_start must be a number in [0, 1], got {pct_start!r}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"OneCycleLR: anneal_strategy must be 'cos' or 'linear', got {anneal_strategy!r}")
        self.anneal_strategy = anneal_strategy
        end = float(pct_start * self.total_steps) - 1
        self._phases = ([(end, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                         (float(2 * pct_start * self.total_steps) - 2, "max_lr", "initial_lr", "base_momentum",
                          "max_momentum"),
                         (self.total_steps - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum")]
                        if three_phase else
                        [(end, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                         (self.total_steps - 1, "max_lr", "min_lr", "base_momentum", "max_momentum")])
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            hyper = optimizer.param_groups[0] if hasattr(optimizer, "param_groups") else {}
            if "betas" in hyper:
                self._momentum_name = "betas"
            elif hyper.get("momentum"):
                self._momentum_name = "momentum"
            else:   # (PyTorch would switch SGD's momentum on; a minitorch SGD built without it keeps no buffer)
                raise ValueError("OneCycleLR: cycle_momentum=True needs an optimizer with momentum (SGD(..., "
                                 "momentum=0.9)) or betas (Adam); pass cycle_momentum=False otherwise")
        groups = optimizer.param_groups
        max_lrs = list(max_lr) if isinstance(max_lr, (list, tuple)) else [max_lr] * len(groups)
        if len(max_lrs) != len(groups):
            raise ValueError(f"OneCycleLR: expected {len(groups)} max_lr values (one per group), got {len(max_lrs)}")
        self.lrs = [{"initial_lr": m / div_factor, "max_lr": m, "min_lr": m / div_factor / final_div_factor}
                    for m in max_lrs]
        self.momenta = {"max_momentum": max_momentum, "base_momentum": base_momentum}
        if last_epoch == -1:
            for group, lrs in zip(groups, self.lrs):
                group["lr"] = group["initial_lr"] = lrs["initial_lr"]
            if cycle_momentum:
                self._set_momentum(optimizer, max_momentum)
        super().__init__(optimizer, last_epoch)

    def _set_momentum(self, optimizer, value):
        for group in optimizer.param_groups:
            if self._momentum_name == "betas":
                group["betas"] = (value, group["betas"][1])
            else:
                group["momentum"] = value

    def load_state_dict(self, state_dict):
        super().load_state_dict(state_dict)
        if isinstance(self.lrs, dict):   # saved before parameter groups: one dict, for the one group
            self.lrs = [self.lrs] * len(self.optimizer.param_groups)

    def _anneal(self, start, end, pct):
        if self.anneal_strategy == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self):
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(f"OneCycleLR: tried to step {step} times; total_steps is {self.total_steps}")
        start = 0.0
        for i, (end, lr_from, lr_to, m_from, m_to) in enumerate(self._phases):
            if step <= end or i == len(self._phases) - 1:
                pct = (step - start) / (end - start)
                if self.cycle_momentum:
                    self._set_momentum(self.optimizer, self._anneal(self.momenta[m_from], self.momenta[m_to], pct))
                return [self._anneal(lrs[lr_from], lrs[lr_to], pct) for lrs in self.lrs]
            start = end


__all__ = ["LRScheduler", "LambdaLR", "StepLR", "ExponentialLR", "CosineAnnealingLR", "OneCycleLR"]
