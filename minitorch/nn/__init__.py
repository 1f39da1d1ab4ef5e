"""minitorch.nn: modules, parameters, layers, initialisers, gradient clipping."""
from . import init, utils
from .containers import ModuleList, Sequential
from .layers import Dropout, Embedding, LayerNorm, Linear
from .module import Module, Parameter

__all__ = ["Module", "Parameter", "Linear", "Embedding", "LayerNorm", "Dropout", "ModuleList", "Sequential", "init",
           "utils"]
