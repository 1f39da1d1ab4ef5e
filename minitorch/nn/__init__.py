"""minitorch.nn: modules, parameters, layers, initialisers, gradient clipping."""
from . import init, utils
from .containers import ModuleList, Sequential
from .layers import GELU, Dropout, Embedding, LayerNorm, Linear, ReLU
from .module import Module, Parameter

__all__ = ["Module", "Parameter", "Linear", "Embedding", "LayerNorm", "Dropout", "ReLU", "GELU", "ModuleList",
           "Sequential", "init", "utils"]
