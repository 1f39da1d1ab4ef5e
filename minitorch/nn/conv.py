"""Conv2d, MaxPool2d and AvgPool2d, as torch.nn's (groups=1), on minitorch.functional's conv2d and poolings."""
import math

from .. import functional as F
from ..factories import zeros
from ..ops.conv import refuse_groups
from ..ops.windows import pair
from . import init
from .module import Module, Parameter


class Conv2d(Module):
    """(N, in_channels, H, W) -> (N, out_channels, Ho, Wo). Initialised as PyTorch does: weight and bias from
    U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = in_channels * kh * kw."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 device=None, dtype=None):
        super().__init__()
        refuse_groups("Conv2d", groups)
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride = pair(kernel_size, "kernel_size"), pair(stride, "stride")
        self.padding, self.dilation = pair(padding, "padding"), pair(dilation, "dilation")
        bound = 1.0 / math.sqrt(in_channels * self.kernel_size[0] * self.kernel_size[1])
        shape = (out_channels, in_channels) + self.kernel_size
        self.weight = Parameter(init.uniform_(zeros(shape, dtype=dtype, device=device), -bound, bound))
        self.bias = Parameter(init.uniform_(zeros((out_channels,), dtype=dtype, device=device), -bound, bound)) \
            if bias else None

    def forward(self, x):
        return F.conv2d(x, self.weight, self.bias, self.stride, self.padding, self.dilation)

    def extra_repr(self):
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"padding={self.padding}, dilation={self.dilation}, bias={self.bias is not None}")


class _Pool2d(Module):
    """What MaxPool2d and AvgPool2d share: the window's settings, and their repr."""

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride or self.kernel_size}, padding={self.padding}"


class MaxPool2d(_Pool2d):
    """The largest value of each window: (N, C, H, W) -> (N, C, Ho, Wo); stride defaults to kernel_size."""

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1):
        super().__init__(kernel_size, stride, padding)
        self.dilation = dilation

    def forward(self, x):
        return F.max_pool2d(x, self.kernel_size, self.stride, self.padding, self.dilation)


class AvgPool2d(_Pool2d):
    """The mean of each window (padding counted as zeros): (N, C, H, W) -> (N, C, Ho, Wo)."""

    def forward(self, x):
        return F.avg_pool2d(x, self.kernel_size, self.stride, self.padding)


class AdaptiveAvgPool2d(Module):
    """The mean of each of output_size bins tiling the image: (N, C, H, W) -> (N, C, oh, ow) (1: a global mean)."""

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, x):
        return F.adaptive_avg_pool2d(x, self.output_size)

    def extra_repr(self):
        return f"output_size={self.output_size}"
