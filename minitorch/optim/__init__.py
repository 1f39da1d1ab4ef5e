"""minitorch.optim: SGD, Adam, AdamW, the warmup learning-rate schedule and lr_scheduler (PyTorch's schedules)."""
from . import lr_scheduler
from .adam import Adam, AdamW
from .optimizer import Optimizer
from .schedule import WarmupSchedule, warmup_lr
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "WarmupSchedule", "warmup_lr", "lr_scheduler"]
