"""Elementwise ops. Each forward sits next to its local derivative; broadcasting is undone by the engine.

Inputs may be Tensors or plain numbers; a number gets a gradient computed for it only if that is cheap, and the
engine drops it. Each backward is written with operators and `array_ops`, so that it runs on arrays (the fast path)
and on Tensors (create_graph=True: the gradient is recorded and can be differentiated again). The GPU's kernels (one
launch per op) are in minitorch/kernels/; the CPU runs this code.
"""
import math

from .. import backend
from ..core import Function
from . import array_ops as A


class Add(Function):
    def forward(self, a, b):
        return a + b

    def backward(self, g):  # d(a+b) = da + db
        return g, g


class Sub(Function):
    def forward(self, a, b):
        return a - b

    def backward(self, g):  # d(a-b) = da - db
        return g, -g


class Mul(Function):
    def forward(self, a, b):   # saves only what backward reads, so y = w * 2 survives a step on w (as in PyTorch)
        need_a, need_b = self.needs_input_grad
        self.save_for_backward(a if need_b else None, b if need_a else None)
        return a * b

    def backward(self, g):  # d(ab) = b da + a db
        a, b = self.saved_tensors
        need_a, need_b = self.needs_input_grad
        return (g * b if need_a else None), (g * a if need_b else None)


class Div(Function):
    def forward(self, a, b):   # a is read only for b's gradient: w / 2 survives a step on w
        self.save_for_backward(a if self.needs_input_grad[1] else None, b)
        return a / b

    def backward(self, g):  # d(a/b) = da / b - (a/b) db / b   (not a / b^2: b^2 overflows first)
        a, b = self.saved_tensors
        need_a, need_b = self.needs_input_grad
        ga = g / b if need_a else None
        gb = -(g / b) * (a / b) if need_b else None
        return ga, gb


class Pow(Function):
    """a ** b; on integers too (int64 ** int64 is int64, as PyTorch), the operands already promoted to one dtype."""

    def forward(self, a, b):
        out = a ** b
        self.save_for_backward(a, b, out)
        return out

    def backward(self, g):  # d(a^b) = b a^(b-1) da + a^b log(a) db
        a, b, out = self.saved_tensors
        need_a, need_b = self.needs_input_grad
        if need_a and isinstance(b, (int, float)) and b == 0:  # (not 0 * a^-1, which is nan at a = 0, as PyTorch)
            ga = g * 0
        else:
            ga = g * b * a ** (b - 1) if need_a else None
        gb = g * out * A.log(a) if need_b else None
        return ga, gb


class Neg(Function):
    def forward(self, a):
        return -a

    def backward(self, g):  # d(-a) = -da
        return -g


class Exp(Function):
    needs_float = True

    def forward(self, a):
        out = backend.xp_of(a).exp(a)
        self.save_for_backward(out)
        return out

    def backward(self, g):  # d exp(a) = exp(a) da
        out, = self.saved_tensors
        return g * out


class Log(Function):
    needs_float = True

    def forward(self, a):
        self.save_for_backward(a)
        return backend.xp_of(a).log(a)

    def backward(self, g):  # d log(a) = da / a
        a, = self.saved_tensors
        return g / a


class Sqrt(Function):
    needs_float = True

    def forward(self, a):
        out = backend.xp_of(a).sqrt(a)
        self.save_for_backward(out)
        return out

    def backward(self, g):  # d sqrt(a) = da / (2 sqrt(a))
        out, = self.saved_tensors
        return g / (2 * out)


class Tanh(Function):
    needs_float = True

    def forward(self, a):
        out = backend.xp_of(a).tanh(a)
        self.save_for_backward(out)
        return out

    def backward(self, g):  # d tanh(a) = (1 - tanh(a)^2) da
        out, = self.saved_tensors
        return g * (1 - out * out)


class Sigmoid(Function):
    needs_float = True

    def forward(self, a):
        out = 0.5 * (1 + backend.xp_of(a).tanh(0.5 * a))  # equals 1 / (1 + exp(-a)) and never overflows
        self.save_for_backward(out)
        return out

    def backward(self, g):  # d s(a) = s(a) (1 - s(a)) da
        out, = self.saved_tensors
        return g * out * (1 - out)


class Relu(Function):
    """out = max(a, 0). The output is saved, not a mask: the next op (a Linear) keeps it anyway, and out > 0
    exactly where a > 0."""

    def forward(self, a):
        out = backend.xp_of(a).maximum(a, 0)  # not a * (a > 0): -inf * 0 is nan
        self.save_for_backward(out)
        return out

    def backward(self, g):  # d relu(a) = [a > 0] da  (0 at a = 0)
        out, = self.saved_tensors
        return g * (out > 0)


class BiasRelu(Function):
    """out = relu(a + b), b broadcast against a (a Linear's bias): d out = [a + b > 0] (da + db), the engine summing
    db back to b's shape."""

    def forward(self, a, b):
        z = a + b                                             # a new array: clamped in place
        out = backend.xp_of(z).maximum(z, 0, out=z if z.ndim else None)  # (0-d: a + b is a NumPy scalar)
        self.save_for_backward(out)
        return out

    def backward(self, g):
        out, = self.saved_tensors
        dz = g * (out > 0)
        return dz, dz


GELU_C = math.sqrt(2.0 / math.pi)


class Gelu(Function):
    """GELU, tanh approximation (Hendrycks & Gimpel; PyTorch's gelu(approximate='tanh')).

    y = 0.5 a (1 + t),  t = tanh(u),  u = c (a + 0.044715 a^3),  c = sqrt(2/pi)
    dy/da = 0.5 (1 + t) + 0.5 a (1 - t^2) c (1 + 3 * 0.044715 a^2)
    For |a| >= 10, t is +-1 and 1 - t^2 is 0 to the last bit in float32 and float64, so a is clipped to [-10, 10]
    inside u and the a^2 factor: the same values, and no overflow of a^3 for huge inputs.
    """
    needs_float = True
    C = GELU_C

    @classmethod
    def tanh_u(cls, a):
        """(clipped a, t) from a, for the forward and again for the backward."""
        c = A.clip(a, -10, 10)
        return c, A.tanh(cls.C * (c + 0.044715 * c * c * c))

    def forward(self, a):
        self.save_for_backward(a)
        _, t = self.tanh_u(a)
        return 0.5 * a * (1 + t)

    def backward(self, g):
        a, = self.saved_tensors
        c, t = self.tanh_u(a)
        return g * (0.5 * (1 + t) + 0.5 * a * (1 - t * t) * self.C * (1 + 3 * 0.044715 * c * c))


class Abs(Function):
    def forward(self, a):
        xp = backend.xp_of(a)
        self.save_for_backward(xp.sign(a).astype(xp.int8))  # an integer array: a constant under create_graph
        return xp.abs(a)

    def backward(self, g):  # d|a| = sign(a) da  (0 at a = 0)
        sign, = self.saved_tensors
        return g * sign


class MaskedFill(Function):
    """out = value where mask else a. mask is a bool array broadcastable to a."""

    def forward(self, a, mask, *, value):
        self.save_for_backward(mask)
        return backend.xp_of(a).where(mask, backend.xp_of(a).asarray(value, dtype=a.dtype), a)

    def backward(self, g):  # filled places do not depend on a
        mask, = self.saved_tensors
        return g * ~mask, None


class Where(Function):
    """out = a where cond else b (a, b broadcast against cond)."""

    def forward(self, cond, a, b):
        self.save_for_backward(cond)
        return backend.xp_of(cond).where(cond, a, b)

    def backward(self, g):  # each side gets the gradient where it was chosen
        cond, = self.saved_tensors
        return None, g * cond, g * ~cond


class Cast(Function):
    """Change the dtype (float16, float32, float64); the gradient is cast back."""
    autocast_to = "none"

    def forward(self, a, *, dtype):
        self.in_dtype = a.dtype
        return a.astype(dtype)

    def backward(self, g):
        return A.astype(g, self.in_dtype)


class ToDevice(Function):
    """Move to another device; the gradient moves back."""
    autocast_to = "none"

    def forward(self, a, *, device):
        self.in_device = backend.device_of(a)
        return backend.to_device(a, device)

    def backward(self, g):
        return A.to_device(g, self.in_device)
