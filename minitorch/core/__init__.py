"""The engine's core: Function (function.py), the graph walk (backward.py) and the switches they read.

It imports neither Tensor nor any op: a value in the graph is a Node (node.py), which Tensor extends, and the ops
(minitorch/ops, minitorch/fused) are Functions built on top. Read function.py, then backward.py.
"""
from . import anomaly_mode, grad_mode, versions
from .backward import FREED, grad, initial_grad, run_backward, unbroadcast
from .function import KERNELS, Function, kernel, reference_ops
from .grad_mode import enable_grad, is_grad_enabled, no_grad, op_hook
from .node import Node

__all__ = ["Node", "Function", "kernel", "reference_ops", "KERNELS", "run_backward", "grad", "initial_grad",
           "unbroadcast", "FREED", "no_grad", "enable_grad", "is_grad_enabled", "op_hook"]
