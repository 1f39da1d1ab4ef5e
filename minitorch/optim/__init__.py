"""minitorch.optim: SGD, Adam, AdamW, RMSprop, Adagrad, Adadelta, Adamax, LBFGS (parameter groups as PyTorch's),
the warmup learning-rate schedule and lr_scheduler (PyTorch's schedules)."""
from . import lr_scheduler
from .adadelta import Adadelta
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .adamax import Adamax
from .lbfgs import LBFGS
from .optimizer import Optimizer
from .rmsprop import RMSprop
from .schedule import WarmupSchedule, warmup_lr
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "LBFGS",
           "WarmupSchedule", "warmup_lr", "lr_scheduler"]
