"""minitorch.optim: SGD, Adam, AdamW, RMSprop, Adagrad (parameter groups as PyTorch's), the warmup learning-rate
schedule and lr_scheduler (PyTorch's schedules)."""
from . import lr_scheduler
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .optimizer import Optimizer
from .rmsprop import RMSprop
from .schedule import WarmupSchedule, warmup_lr
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "WarmupSchedule", "warmup_lr", "lr_scheduler"]
