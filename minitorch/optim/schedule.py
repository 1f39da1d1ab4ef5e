"""Learning-rate schedules that set optimizer.lr each step."""


def warmup_lr(step, d_model, warmup, factor=1.0):
    """lr = factor * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)  (Vaswani et al., 2017; step counts from 1)."""
    step = max(step, 1)
    return factor * d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)


def noam_factor(lr, d_model, warmup):
    """The factor of warmup_lr that makes its peak, at step = warmup, equal lr."""
    return lr * d_model ** 0.5 * warmup ** 0.5


class WarmupSchedule:
    """Linear warmup for `warmup` steps, then decay as 1/sqrt(step). Call step() after each optimizer.step()."""

    def __init__(self, optimizer, d_model, warmup=4000, factor=1.0):
        if warmup <= 0:
            raise ValueError(f"WarmupSchedule: warmup must be > 0, got {warmup}")
        self.optimizer, self.d_model, self.warmup, self.factor = optimizer, d_model, warmup, factor
        self.step_num = 0
        self.optimizer.lr = warmup_lr(1, d_model, warmup, factor)

    def step(self):
        self.step_num += 1
        self.optimizer.lr = warmup_lr(self.step_num + 1, self.d_model, self.warmup, self.factor)
        return self.optimizer.lr

    def state_dict(self):
        return {"step_num": self.step_num, "d_model": self.d_model, "warmup": self.warmup, "factor": self.factor}

    def load_state_dict(self, sd):
        self.step_num, self.d_model, self.warmup, self.factor = (int(sd["step_num"]), sd["d_model"],
                                                                 int(sd["warmup"]), sd["factor"])
        self.optimizer.lr = warmup_lr(self.step_num + 1, self.d_model, self.warmup, self.factor)


NoamSchedule = WarmupSchedule
