"""Relu, BiasRelu and Gelu on the GPU: one kernel each way (the reference takes two or more launches)."""
from .. import backend
from ..core import kernel
from ..ops import BiasRelu, Gelu, Relu
from ..ops.elementwise import GELU_C


@backend.fuse
def relu_grad(xp, g, out):
    """g * [out > 0]: relu's backward from its output, in one kernel (out > 0 exactly where a > 0)."""
    return g * (out > 0)


@backend.fuse
def bias_relu(xp, a, b):
    """max(a + b, 0) in one kernel."""
    return xp.maximum(a + b, 0)


@kernel(Relu, "cuda")
class ReluCuda(Relu):
    def backward(self, g):
        out, = self.saved_tensors
        return relu_grad(g, out)


@kernel(BiasRelu, "cuda")
class BiasReluCuda(BiasRelu):
    def forward(self, a, b):
        out = bias_relu(a, b)
        self.save_for_backward(out)
        return out

    def backward(self, g):
        out, = self.saved_tensors
        dz = relu_grad(g, out)
        return dz, dz


def _gelu_t(xp, a):
    """(clipped a, tanh(u)) of Gelu, inside a kernel body (Gelu.tanh_u's expression)."""
    c = xp.minimum(xp.maximum(a, -10.0), 10.0)
    return c, xp.tanh(GELU_C * (c + 0.044715 * c * c * c))


@backend.fuse
def gelu(xp, a):
    """0.5 a (1 + t) in one kernel."""
    _, t = _gelu_t(xp, a)
    return 0.5 * a * (1 + t)


@backend.fuse
def gelu_grad(xp, g, a):
    """g dy/da in one kernel (the formula of Gelu's docstring)."""
    c, t = _gelu_t(xp, a)
    return g * (0.5 * (1 + t) + 0.5 * a * (1 - t * t) * GELU_C * (1 + 3 * 0.044715 * c * c))


@kernel(Gelu, "cuda")
class GeluCuda(Gelu):
    """One kernel forward, one backward; both recompute t from a, the one array saved."""

    def forward(self, a):
        self.save_for_backward(a)
        return gelu(a)

    def backward(self, g):
        a, = self.saved_tensors
        return gelu_grad(g, a)
