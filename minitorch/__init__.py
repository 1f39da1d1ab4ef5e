"""minitorch: a small, readable reverse-mode autograd engine on NumPy (CuPy on the GPU)."""
from . import accelerator, amp, autograd, backend, backends, core, cuda, functional, kernels, nn, onnx, optim, utils
from .core import Function, enable_grad, grad, is_grad_enabled, no_grad, reference_ops
from .backend import cuda_available, get_default_device, manual_seed, set_default_device
from .functional import softmax
from .gradcheck import GradcheckError, gradcheck, gradgradcheck
from .tools.graph_draw import draw_graph
from .serialization import load, save
from .promotion import promote_types, result_type
from .factories import (BoolTensor, DoubleTensor, FloatTensor, LongTensor, arange, empty, empty_like, eye, from_numpy,
                        full, full_like, linspace, ones, ones_like, rand, rand_like, randint, randn, randn_like,
                        randperm, tensor, zeros, zeros_like)
from .functions import (abs, add, allclose, amax, amin, argmax, argmin, cat, chunk, clamp, clip, clone, cos, div, dot,
                        equal, erf, exp, flatten, is_tensor, log, masked_fill, matmul, max, maximum, mean, min, minimum,
                        mm, mul, narrow, neg, norm, numel, permute, pow, relu, reshape, round, rsqrt, sigmoid, sin,
                        split, sqrt, square, squeeze, stack, sub, sum, t, tanh, transpose, unsqueeze, where)
from .generator import Generator
from .tensor import Tensor, bool_, float32, float64, int64
from .dtypes import device, double, float, float16, half, int32, long
from .amp import autocast, get_autocast_dtype, is_autocast_enabled

__version__ = "0.1.0"

