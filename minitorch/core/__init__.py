"""The engine's core: Function (function.py), the graph walk (backward.py) and the switches they read.
higher_order.py runs a backward on Tensors for create_graph=True; grad.py holds grad().

It imports neither Tensor nor any op: the engine knows a tensor as a Value (value.py), which Tensor extends, and the
graph is made of the recorded Functions; the ops (minitorch/ops, minitorch/fused) are Functions built on top. Read
function.py, then backward.py.
"""
from . import anomaly_mode, ctx_form, grad_mode, versions
from .backward import initial_grad, run_backward, unbroadcast
from .function import FREED, KERNELS, Constant, Function, View, fresh_gradients, kernel, reference_of, reference_ops
from .grad import grad
from .grad_mode import enable_grad, is_grad_enabled, no_grad, op_hook, using_config
from .value import Value

__all__ = ["Value", "Function", "View", "Constant", "reference_of", "kernel", "fresh_gradients", "reference_ops",
           "KERNELS", "run_backward", "grad", "initial_grad", "unbroadcast", "FREED", "no_grad", "enable_grad",
           "is_grad_enabled", "op_hook", "using_config"]
