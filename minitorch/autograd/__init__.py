"""minitorch.autograd: reverse-mode differentiation, with PyTorch's names.

engine.py: Function, the graph walk, grad(); grad_mode.py: no_grad, enable_grad (per thread); versions.py:
in-place safety; anomaly_mode.py: detect_anomaly; functional.py: jacobian, hessian, vjp, jvp, hvp; array_ops.py:
the array-or-Tensor functions that a twice-differentiable backward is written with.
"""
# engine before array_ops and functional: they import ops/, whose Functions import Function from this package
from .engine import FREED, Function, _topological_order, grad, initial_grad, run_backward, unbroadcast
from . import array_ops, functional
from .anomaly_mode import detect_anomaly, is_anomaly_enabled
from .grad_mode import enable_grad, is_grad_enabled, no_grad, op_hook
from .versions import increment_version

__all__ = ["Function", "no_grad", "enable_grad", "is_grad_enabled", "unbroadcast", "run_backward", "grad",
           "detect_anomaly", "is_anomaly_enabled", "increment_version", "functional", "array_ops"]
