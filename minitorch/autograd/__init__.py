"""minitorch.autograd: torch.autograd's names for the engine (minitorch/core) and its tools.

Function, grad, no_grad, enable_grad, detect_anomaly, increment_version come from the core; functional.py holds
jacobian, hessian, vjp, jvp, hvp, vhp (built on Tensors, so this package sits above tensor.py, and the core below it).
"""
from ..core import (Function, enable_grad, grad, is_grad_enabled, kernel, no_grad, op_hook, reference_ops,
                    run_backward, unbroadcast)
from ..core.anomaly_mode import detect_anomaly, is_anomaly_enabled
from ..core.versions import increment_version
from . import functional

__all__ = ["Function", "no_grad", "enable_grad", "is_grad_enabled", "unbroadcast", "run_backward", "grad",
           "detect_anomaly", "is_anomaly_enabled", "increment_version", "functional", "kernel", "reference_ops",
           "op_hook"]
