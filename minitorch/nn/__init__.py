"""minitorch.nn: modules, parameters, layers, losses, initialisers, gradient clipping."""
from . import functional, init, utils
from .containers import ModuleList, Sequential
from .layers import GELU, Dropout, Embedding, LayerNorm, Linear, ReLU, Sigmoid, Tanh
from .loss import BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, MSELoss
from .module import Module, Parameter

__all__ = ["Module", "Parameter", "Linear", "Embedding", "LayerNorm", "Dropout", "ReLU", "GELU", "Tanh", "Sigmoid",
           "MSELoss", "BCELoss", "BCEWithLogitsLoss", "CrossEntropyLoss", "ModuleList", "Sequential", "functional",
           "init", "utils"]
