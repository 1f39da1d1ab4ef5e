"""minitorch.optim: SGD, Adam, AdamW and the warmup learning-rate schedule."""
from .adam import Adam, AdamW
from .optimizer import Optimizer
from .schedule import WarmupSchedule, warmup_lr
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "WarmupSchedule", "warmup_lr"]
