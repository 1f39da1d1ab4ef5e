"""minitorch.nn: modules, parameters, layers, losses, initialisers, gradient clipping."""
from . import functional, init, utils
from .containers import ModuleList, Sequential
from .conv import AdaptiveAvgPool2d, AvgPool2d, Conv2d, MaxPool2d
from .flatten import Flatten, Unflatten
from .layers import (GELU, Dropout, Dropout1d, Dropout2d, Embedding, LayerNorm, Linear, LogSoftmax, ReLU, Sigmoid,
                     Softmax, Tanh)
from .loss import (BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, HuberLoss, L1Loss, MSELoss, NLLLoss,
                   SmoothL1Loss)
from .module import Module, Parameter
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNCell

__all__ = ["Module", "Parameter", "Linear", "Embedding", "LayerNorm", "Dropout", "ReLU", "GELU", "Tanh", "Sigmoid",
           "MSELoss", "BCELoss", "BCEWithLogitsLoss", "CrossEntropyLoss", "ModuleList", "Sequential", "functional",
           "init", "utils", "Flatten", "Unflatten", "NLLLoss", "LSTM", "GRU", "Softmax", "LogSoftmax",
           "Conv2d", "MaxPool2d", "AvgPool2d", "Dropout1d", "Dropout2d", "L1Loss", "SmoothL1Loss", "HuberLoss", "RNN",
           "RNNCell", "LSTMCell", "GRUCell", "AdaptiveAvgPool2d"]
