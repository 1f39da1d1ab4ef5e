"""minitorch.autograd: reverse-mode differentiation (engine.py: Function, the graph walk, grad mode)."""
from .engine import (FREED, Function, _op_hook, _topological_order, enable_grad, grad, initial_grad, is_grad_enabled,
                     no_grad, op_hook, run_backward, unbroadcast)

__all__ = ["Function", "no_grad", "enable_grad", "is_grad_enabled", "unbroadcast", "run_backward", "grad"]
