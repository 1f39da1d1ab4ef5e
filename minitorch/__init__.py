"""minitorch: a small, readable reverse-mode autograd engine on NumPy (CuPy on the GPU)."""
from . import autograd, backend, core, functional, kernels, nn, optim, utils
from .core import Function, enable_grad, grad, is_grad_enabled, no_grad, reference_ops
from .backend import cuda_available, manual_seed
from .gradcheck import GradcheckError, gradcheck, gradgradcheck
from .tools.graph_draw import draw_graph
from .serialization import load, save
from .tensor import (Tensor, arange, bool_, cat, float32, float64, from_numpy, full, int64, matmul, ones, ones_like,
                     rand, randn, stack, tensor, where, zeros, zeros_like)

__version__ = "0.1.0"
