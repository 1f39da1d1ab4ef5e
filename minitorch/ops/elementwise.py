"""Elementwise ops. Each forward sits next to its local derivative; broadcasting is undone by the engine.

Inputs may be Tensors or plain numbers; a number gets a gradient computed for it only if that is cheap, and the
engine drops it. Each backward is written with operators and `generic`, so that it runs on arrays (the fast path) and
on Tensors (create_graph=True: the gradient is recorded and can be differentiated again).
"""
import math

from .. import backend
from ..autograd import Function
from . import generic


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
        self.a, self.b = (a if need_b else None), (b if need_a else None)
        return a * b

    def backward(self, g):  # d(ab) = b da + a db
        need_a, need_b = self.needs_input_grad
        return (g * self.b if need_a else None), (g * self.a if need_b else None)


class Div(Function):
    def forward(self, a, b):   # a is read only for b's gradient: w / 2 survives a step on w
        self.a, self.b = (a if self.needs_input_grad[1] else None), b
        return a / b

    def backward(self, g):  # d(a/b) = da / b - (a/b) db / b   (not a / b^2: b^2 overflows first)
        need_a, need_b = self.needs_input_grad
        ga = g / self.b if need_a else None
        gb = -(g / self.b) * (self.a / self.b) if need_b else None
        return ga, gb


class Pow(Function):
    needs_float = True

    def forward(self, a, b):
        self.a, self.b = a, b
        self.out = a ** b
        return self.out

    def backward(self, g):  # d(a^b) = b a^(b-1) da + a^b log(a) db
        need_a, need_b = self.needs_input_grad
        a, b = self.a, self.b
        ga = g * b * a ** (b - 1) if need_a else None
        gb = g * self.out * generic.log(a) if need_b else None
        return ga, gb


class Neg(Function):
    def forward(self, a):
        return -a

    def backward(self, g):  # d(-a) = -da
        return -g


class Exp(Function):
    needs_float = True

    def forward(self, a):
        self.out = backend.xp_of(a).exp(a)
        return self.out

    def backward(self, g):  # d exp(a) = exp(a) da
        return g * self.out


class Log(Function):
    needs_float = True

    def forward(self, a):
        self.a = a
        return backend.xp_of(a).log(a)

    def backward(self, g):  # d log(a) = da / a
        return g / self.a


class Sqrt(Function):
    needs_float = True

    def forward(self, a):
        self.out = backend.xp_of(a).sqrt(a)
        return self.out

    def backward(self, g):  # d sqrt(a) = da / (2 sqrt(a))
        return g / (2 * self.out)


class Tanh(Function):
    needs_float = True

    def forward(self, a):
        self.out = backend.xp_of(a).tanh(a)
        return self.out

    def backward(self, g):  # d tanh(a) = (1 - tanh(a)^2) da
        return g * (1 - self.out * self.out)


class Sigmoid(Function):
    needs_float = True

    def forward(self, a):
        # 0.5 (1 + tanh(a/2)) equals 1 / (1 + exp(-a)) and never overflows
        self.out = 0.5 * (1 + backend.xp_of(a).tanh(0.5 * a))
        return self.out

    def backward(self, g):  # d s(a) = s(a) (1 - s(a)) da
        return g * self.out * (1 - self.out)


@backend.fuse
def _relu_grad(xp, g, out):
    """g * [out > 0]: relu's backward from its output, in one kernel (out > 0 exactly where a > 0)."""
    return g * (out > 0)


class Relu(Function):
    """On the GPU the mask is rebuilt from the output in the backward's one kernel, not made by a second forward
    kernel; on the CPU the bool mask is saved (smaller than the output, and the backward one multiply)."""
    positive = None

    def forward(self, a):
        out = backend.xp_of(a).maximum(a, 0)  # not a * positive: -inf * 0 is nan
        if backend.fused_path(a):
            self.out = out
        else:
            self.positive = a > 0
        return out

    def backward(self, g):  # d relu(a) = [a > 0] da  (0 at a = 0)
        return g * self.positive if self.positive is not None else _relu_grad(g, self.out)


@backend.fuse
def _bias_relu(xp, a, b):
    """max(a + b, 0) in one kernel."""
    return xp.maximum(a + b, 0)


class BiasRelu(Function):
    """out = relu(a + b), b broadcast against a (a Linear's bias): d out = [a + b > 0] (da + db), the engine summing
    db back to b's shape. On the GPU one kernel forward (the backward's mask comes from the output, as in Relu);
    on the CPU the sum is computed once and clamped in place."""

    def forward(self, a, b):
        self.fused = backend.fused_path(a)
        if self.fused:
            self.out = _bias_relu(a, b)
            return self.out
        z = a + b
        self.positive = z > 0
        return backend.xp_of(z).maximum(z, 0, out=z if z.ndim else None)  # (0-d: a + b is a NumPy scalar)

    def backward(self, g):
        dz = _relu_grad(g, self.out) if self.fused else g * self.positive
        return dz, dz


GELU_C = math.sqrt(2.0 / math.pi)


def _gelu_t(xp, a):
    """(clipped a, tanh(u)) of Gelu, inside a kernel body."""
    c = xp.minimum(xp.maximum(a, -10.0), 10.0)
    return c, xp.tanh(GELU_C * (c + 0.044715 * c * c * c))


@backend.fuse
def _gelu(xp, a):
    """0.5 a (1 + t) in one kernel."""
    _, t = _gelu_t(xp, a)
    return 0.5 * a * (1 + t)


@backend.fuse
def _gelu_grad(xp, g, a):
    """g dy/da in one kernel (the formula of Gelu's docstring)."""
    c, t = _gelu_t(xp, a)
    return g * (0.5 * (1 + t) + 0.5 * a * (1 - t * t) * GELU_C * (1 + 3 * 0.044715 * c * c))


class Gelu(Function):
    """GELU, tanh approximation (Hendrycks & Gimpel; PyTorch's gelu(approximate='tanh')).

    y = 0.5 a (1 + t),  t = tanh(u),  u = c (a + 0.044715 a^3),  c = sqrt(2/pi)
    dy/da = 0.5 (1 + t) + 0.5 a (1 - t^2) c (1 + 3 * 0.044715 a^2)
    For |a| >= 10, t is +-1 and 1 - t^2 is 0 to the last bit in float32 and float64, so a is clipped to [-10, 10]
    inside u and the a^2 factor: the same values, and no overflow of a^3 for huge inputs.
    On the GPU the forward and the backward are one kernel each (_gelu, _gelu_grad), which recompute t from a.
    """
    needs_float = True
    C = GELU_C

    def forward(self, a):
        self.a, self.fused = a, backend.fused_path(a)
        if self.fused:
            return _gelu(a)
        self.recompute(a)
        return 0.5 * a * (1 + self.t)

    def recompute(self, a):  # also called with the input Tensor under create_graph, so that t is differentiated
        self.clipped = c = generic.clip(a, -10, 10)
        self.t = generic.tanh(self.C * (c + 0.044715 * c * c * c))

    def backward(self, g):
        if self.fused and generic.is_array(g):  # (Tensors under create_graph: the formula below)
            return _gelu_grad(g, self.a)
        a, c, t = self.a, self.clipped, self.t
        return g * (0.5 * (1 + t) + 0.5 * a * (1 - t * t) * self.C * (1 + 3 * 0.044715 * c * c))


class Abs(Function):
    constants = ("sign",)

    def forward(self, a):
        self.sign = backend.xp_of(a).sign(a)
        return backend.xp_of(a).abs(a)

    def backward(self, g):  # d|a| = sign(a) da  (0 at a = 0)
        return g * self.sign


class MaskedFill(Function):
    """out = value where mask else a. mask is a bool array broadcastable to a."""

    def forward(self, a, mask, *, value):
        self.keep = ~mask
        return backend.xp_of(a).where(mask, backend.xp_of(a).asarray(value, dtype=a.dtype), a)

    def backward(self, g):  # filled places do not depend on a
        return g * self.keep, None


class Where(Function):
    """out = a where cond else b (a, b broadcast against cond)."""

    def forward(self, cond, a, b):
        self.cond = cond
        return backend.xp_of(cond).where(cond, a, b)

    def backward(self, g):  # each side gets the gradient where it was chosen
        return None, g * self.cond, g * ~self.cond


def random_words(shape, device):
    """Random uint16 words of `shape` from the device's generator: on the CPU the generator's raw 64-bit outputs, four
    words each (2.5-4x faster than integers(dtype=uint16)), on the GPU one draw of integers."""
    xp, rng = backend.xp_of_device(device), backend.rng(device)
    if device == "cpu":
        n = math.prod(shape)
        return rng.bit_generator.random_raw(-(-n // 4)).view(xp.uint16)[:n].reshape(shape)
    return rng.integers(0, 1 << 16, size=shape, dtype=xp.uint16)


def keep_threshold(p, device):
    """The uint16 a random word must reach to be kept: P(keep) = 1 - p, p rounded to a multiple of 2^-16."""
    return backend.xp_of_device(device).uint16(min(round(p * (1 << 16)), (1 << 16) - 1))


def keep_mask(shape, p, device):
    """A bool array of `shape`, each element True with probability 1 - p: random 16-bit words compared once with a
    threshold, cheaper than drawing floats. Dropout and the fused attention both draw here (or, on the GPU, draw the
    same words and compare them inside their kernel), so one seed gives both the same mask."""
    return random_words(shape, device) >= keep_threshold(p, device)


@backend.fuse
def dropout_kernel(xp, a, words, threshold, scale):
    """(a * m * scale, m) with the keep mask m = words >= threshold, in one kernel after the one random draw."""
    keep = words >= threshold
    return a * keep * scale, keep


@backend.fuse
def scale_by_mask(xp, g, keep, scale):
    """g * m * scale in one kernel: the gradient of a dropout (and its output, rebuilt from the saved mask)."""
    return g * keep * scale


class Dropout(Function):
    """out = a * m / (1 - p), m ~ Bernoulli(1 - p) from keep_mask, saved as bool; the gradient is g * m / (1 - p).
    On the GPU the mask, the product and the scale are one kernel (dropout_kernel) after the random draw."""
    needs_float = True

    def forward(self, a, *, p):
        device, self.fused = backend.device_of(a), backend.fused_path(a)
        self.scale = 1.0 / (1.0 - p)
        if self.fused:
            out, self.keep = dropout_kernel(a, random_words(a.shape, device), keep_threshold(p, device),
                                            a.dtype.type(self.scale))
            return out
        self.keep = keep_mask(a.shape, p, device)
        out = a * self.keep
        out *= self.scale  # a Python float: the product keeps a's dtype
        return out

    def backward(self, g):
        if self.fused and generic.is_array(g):
            return scale_by_mask(g, self.keep, g.dtype.type(self.scale))
        dx = g * self.keep
        dx *= self.scale
        return dx


@backend.fuse
def dropout_add_kernel(xp, x, y, words, threshold, scale):
    """(x + y * m * scale, m) with the keep mask m = words >= threshold, in one kernel."""
    keep = words >= threshold
    return x + y * keep * scale, keep


class DropoutAdd(Function):
    """out = x + y * m / (1 - p) for x, y of one shape (a residual connection around a dropped-out sub-layer), with m
    drawn as Dropout draws it (the same mask for a seed); dx = g, dy = g * m / (1 - p). On the GPU the mask, the scale
    and the sum are one kernel after the random draw, where a Dropout and an Add take three."""
    needs_float = True

    def forward(self, x, y, *, p):
        device, self.fused = backend.device_of(y), backend.fused_path(y)
        self.scale = 1.0 / (1.0 - p)
        if self.fused:
            out, self.keep = dropout_add_kernel(x, y, random_words(y.shape, device), keep_threshold(p, device),
                                                y.dtype.type(self.scale))
            return out
        self.keep = keep_mask(y.shape, p, device)
        out = y * self.keep
        out *= self.scale
        out += x
        return out

    def backward(self, g):
        if self.fused and generic.is_array(g):
            return g, scale_by_mask(g, self.keep, g.dtype.type(self.scale))
        dy = g * self.keep
        dy *= self.scale
        return g, dy


class Cast(Function):
    """Change the dtype (float32 <-> float64); the gradient is cast back."""

    def forward(self, a, *, dtype):
        self.in_dtype = a.dtype
        return a.astype(dtype)

    def backward(self, g):
        return generic.astype(g, self.in_dtype)


class ToDevice(Function):
    """Move to another device; the gradient moves back."""

    def forward(self, a, *, device):
        self.in_device = backend.device_of(a)
        return backend.to_device(a, device)

    def backward(self, g):
        return generic.to_device(g, self.in_device)
