"""The warmup schedule of "Attention Is All You Need", an LRScheduler (optim/lr_scheduler.py) like PyTorch's."""
from .lr_scheduler import LRScheduler


def warmup_lr(step, d_model, warmup, factor=1.0):
    """lr = factor * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)  (Vaswani et al., 2017; step counts from 1)."""
    step = max(step, 1)
    return factor * d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)


def noam_factor(lr, d_model, warmup):
    """The factor of warmup_lr that makes its peak, at step = warmup, equal lr."""
    return lr * d_model ** 0.5 * warmup ** 0.5


class WarmupSchedule(LRScheduler):
    """Linear warmup for `warmup` steps, then decay as 1/sqrt(step): every group's lr is warmup_lr(last_epoch + 1)
    (construction counts as step 0, as every LRScheduler's). Call step() after each optimizer.step()."""

    def __init__(self, optimizer, d_model, warmup=4000, factor=1.0, last_epoch=-1):
        if warmup <= 0:
            raise ValueError(f"WarmupSchedule: warmup must be > 0, got {warmup}")
        self.d_model, self.warmup, self.factor = d_model, warmup, factor
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        return [warmup_lr(self.last_epoch + 1, self.d_model, self.warmup, self.factor)] * len(self.base_lrs)

    def step(self):
        """Advance one step and set the lr for it; returns it."""
        super().step()
        return self.optimizer.lr

    def state_dict(self):
        # the keys checkpoints have always held (a run's last.npz), step_num being last_epoch
        return {"step_num": self.last_epoch, "d_model": self.d_model, "warmup": self.warmup, "factor": self.factor}

    def load_state_dict(self, sd):
        self.last_epoch, self.d_model, self.warmup, self.factor = (int(sd["step_num"]), sd["d_model"],
                                                                   int(sd["warmup"]), sd["factor"])
        self._step_count = self.last_epoch + 1
        for group, lr in zip(self.optimizer.param_groups, self.get_lr()):
            group["lr"] = lr
        self._last_lr = self._lrs()
