"""minitorch.functional (imported as F): activations, dropout, linear, embedding, and the fused ops.

The fused ops (softmax, log_softmax, cross_entropy, layer_norm, scaled_dot_product_attention, self_attention,
cross_attention, lstm_cell) live in `minitorch/fused/`, each one Function with a hand-written backward; this module
re-exports them.
"""
import math
import warnings

import numpy as np

from . import backend
from .fused import (cross_attention, cross_entropy, layer_norm, log_softmax, lstm_cell, scaled_dot_product_attention,
                    self_attention, softmax)
from .ops import BiasRelu, Dropout, DropoutAdd, Embedding, Erf, Linear, MergeHeads, SplitHeads, random_words
from .ops.conv import AvgPool2d as AvgPool2dOp, Conv2d as Conv2dOp, MaxPool2d as MaxPool2dOp, refuse_groups
from .ops.windows import window
from .factories import ones, zeros, zeros_like
from .functions import stack
from .tensor import Tensor


def relu(x):
    """max(x, 0), any shape."""
    return x.relu()


def bias_relu(x, bias):
    """max(x + bias, 0), bias broadcast against x (..., n) (a Linear's bias, added here): one op, one GPU kernel."""
    return BiasRelu.apply(x, bias)


def gelu(x, approximate="tanh"):
    """GELU, any shape: approximate="tanh" (the default here, and the Transformer's) or "none", the exact
    x Phi(x) = 0.5 x (1 + erf(x / sqrt(2))) that is PyTorch's default."""
    if approximate == "tanh":
        return x.gelu()
    if approximate == "none":
        return 0.5 * x * (1 + Erf.apply(x * (1 / math.sqrt(2))))
    raise ValueError(f"gelu: approximate must be 'tanh' or 'none', got {approximate!r}")


def dropout(x, p=0.5, training=True):
    """Zero each element with probability p and scale the rest by 1/(1-p); identity when not training or p == 0."""
    if not 0.0 <= p < 1.0:
        raise ValueError(f"dropout: p must be in [0, 1), got {p}")
    if not training or p == 0.0:
        return x
    return Dropout.apply(x, random_words(x.shape, x.device), p=p)


def _channel_dropout(who, x, p, training, inplace, channels=2):
    """x times a mask of shape x.shape[:channels] + (1, ...) ((N, C, 1, ...), or (C, 1, ...) unbatched): each channel
    kept whole, scaled by 1/(1-p), or zeroed with probability p. The mask is Dropout of ones, a constant: x's gradient
    is g times the same mask."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{who}: dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return x
    shape = x.shape[:channels] + (1,) * (x.ndim - channels)
    if p == 1.0:   # every channel dropped (1/(1-p) would be infinite)
        mask = zeros(shape, dtype=x.dtype, device=x.device)
    else:
        mask = Dropout.apply(ones(shape, dtype=x.dtype, device=x.device), random_words(shape, x.device), p=p)
    return x.mul_(mask) if inplace else x * mask


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels: input (N, C, L) (or unbatched (C, L)), each of the N x C rows of L values zeroed with
    probability p, the others scaled by 1/(1-p); identity when not training."""
    if input.ndim not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D input: dropout1d "
                           f"drops channels of (N, C, L) or (C, L)")
    return _channel_dropout("dropout1d", input, p, training, inplace, channels=input.ndim - 1)


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels: input (N, C, H, W), each of the N x C maps of H x W values zeroed with probability p, the
    others scaled by 1/(1-p); identity when not training. As PyTorch's, a 3-D input is taken as (N, C, L) (with a
    warning), and other ranks are masked over their first two dims with a warning."""
    if input.ndim < 2:
        raise RuntimeError(f"dropout2d: Feature dropout requires at least 2 dimensions in the input, got shape "
                           f"{input.shape}")
    if input.ndim not in (3, 4):
        warnings.warn(f"dropout2d: Received a {input.ndim}-D input to dropout2d, which is deprecated (PyTorch); "
                      f"dropout2d drops channels of (N, C, H, W)", stacklevel=2)
    if input.ndim == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout "
                      "behavior is desired - input is interpreted as shape (N, C, L), as PyTorch does; use "
                      "dropout1d for that", stacklevel=2)
    return _channel_dropout("dropout2d", input, p, training, inplace)


def dropout_add(x, y, p=0.5, training=True):
    """x + dropout(y, p, training) for x, y of one shape and dtype (a residual connection): one op, one GPU kernel."""
    if not 0.0 <= p < 1.0:
        raise ValueError(f"dropout_add: p must be in [0, 1), got {p}")
    if x.shape != y.shape or x.dtype != y.dtype:
        raise ValueError(f"dropout_add: x and y must have one shape and dtype, got {x.shape} {x.dtype} and "
                         f"{y.shape} {y.dtype}")
    if not training or p == 0.0:
        return x + y
    return DropoutAdd.apply(x, y, random_words(y.shape, y.device), p=p)


def linear(x, weight, bias=None):
    """x (..., in) @ weight (out, in)^T + bias (out,) -> (..., out)."""
    if x.shape[-1] != weight.shape[-1]:
        raise ValueError(f"linear: input of shape {x.shape} has {x.shape[-1]} features but the weight of shape "
                         f"{weight.shape} expects {weight.shape[-1]}")
    return Linear.apply(x, weight, bias)


def split_heads(x, n_heads, n=None):
    """x (B, T, n_heads * d) -> (B, n_heads, T, d); with n, x (B, T, n * n_heads * d) -> (n, B, n_heads, T, d): n
    projections side by side (attention's q, k, v), each split into heads. One view op (x.reshape(...).permute(...))."""
    parts = n_heads * (1 if n is None else n)
    if x.ndim != 3 or n_heads < 1 or (n is not None and n < 1) or x.shape[-1] % parts:
        raise ValueError(f"split_heads: expected x (B, T, {'' if n is None else f'{n} * '}{n_heads} * d), got shape "
                         f"{x.shape}")
    return SplitHeads.apply(x, n_heads=n_heads, n=n)


def merge_heads(x):
    """x (B, n_heads, T, d) -> (B, T, n_heads * d): the heads side by side, as split_heads took them apart."""
    if x.ndim != 4:
        raise ValueError(f"merge_heads: expected x (B, n_heads, T, d), got shape {x.shape}")
    return MergeHeads.apply(x)


def embedding(ids, weight, padding_idx=None):
    """ids (...) int, weight (n, d) -> (..., d). Host ids are range-checked before they move to weight's device."""
    ids_data = backend.array_of(ids)
    if not backend.is_array(ids_data):
        ids_data = np.asarray(ids_data)
    if ids_data.dtype.kind not in "iu":
        raise TypeError(f"embedding: ids must be integers, got dtype {ids_data.dtype}")
    bad = backend.out_of_range(ids_data, weight.shape[0])
    if bad:
        raise IndexError(f"embedding: ids must lie in [0, {weight.shape[0]}), got values from {bad[0]} to {bad[1]}")
    return Embedding.apply(backend.to_device(ids_data, weight.device), weight, padding_idx=padding_idx)


# ----- PyTorch's everyday activations and losses, with its names and defaults (but gelu's: see gelu) -----
REDUCTIONS = ("mean", "sum", "none")


def sigmoid(x):
    """1 / (1 + exp(-x)), any shape."""
    return x.sigmoid()


def tanh(x):
    """tanh(x), any shape."""
    return x.tanh()


def _reduce(loss, reduction, who):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{who}: reduction must be one of {REDUCTIONS}, got {reduction!r}")


def _same_shape(input, target, who):
    if not isinstance(input, Tensor) or not isinstance(target, Tensor):
        raise TypeError(f"{who}: input and target must be Tensors, got {type(input).__name__} and "
                        f"{type(target).__name__}")
    if input.shape != target.shape:
        raise ValueError(f"{who}: target of shape {target.shape} for input of shape {input.shape}; they must be "
                         f"the same (PyTorch would broadcast them, usually by mistake)")


def mse_loss(input, target, reduction="mean"):
    """(input - target)^2 elementwise, then averaged ("mean"), summed ("sum") or not ("none"); one shape for both."""
    _same_shape(input, target, "mse_loss")
    d = input - target
    return _reduce(d * d, reduction, "mse_loss")


def l1_loss(input, target, reduction="mean"):
    """|input - target| elementwise, then averaged, summed or not (reduction); one shape for both."""
    _same_shape(input, target, "l1_loss")
    return _reduce((input - target).abs(), reduction, "l1_loss")


def _quadratic_then_linear(who, input, target, edge, curve, slope):
    """curve m^2 / 2 + slope (|d| - m), m = min(|d|, edge), d = input - target: curve d^2 / 2 where |d| < edge,
    then a line of slope `slope` (continuous when slope = curve edge). Both branches at once, so that no where keeps
    an infinite branch; the gradient is curve d inside, slope sign(d) outside, as PyTorch's."""
    _same_shape(input, target, who)
    a = (input - target).abs()
    m = a.clamp(max=edge)
    return m * m * (0.5 * curve) + (a - m) * slope


def smooth_l1_loss(input, target, reduction="mean", beta=1.0):
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta, d = input - target (beta = 0: |d|); reduced as
    reduction."""
    if beta < 0:
        raise RuntimeError(f"smooth_l1_loss does not support negative values for beta, got beta={beta}")
    if beta == 0:
        _same_shape(input, target, "smooth_l1_loss")   # (an error names the function called)
        return l1_loss(input, target, reduction)
    return _reduce(_quadratic_then_linear("smooth_l1_loss", input, target, beta, 1.0 / beta, 1.0), reduction,
                   "smooth_l1_loss")


def huber_loss(input, target, reduction="mean", delta=1.0):
    """0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta), d = input - target (smooth_l1_loss with beta = delta,
    times delta); reduced as reduction."""
    if delta <= 0:
        raise RuntimeError(f"huber_loss does not support non-positive values for delta, got delta={delta}")
    return _reduce(_quadratic_then_linear("huber_loss", input, target, delta, 1.0, delta), reduction, "huber_loss")


def binary_cross_entropy(input, target, weight=None, reduction="mean"):
    """-(t log p + (1 - t) log(1 - p)) for probabilities p = input in [0, 1] and targets t of its shape, each log at
    least -100 as in PyTorch (so p = 0 or 1 gives a finite loss); weight rescales each element."""
    _same_shape(input, target, "binary_cross_entropy")
    tiny = math.exp(-100)   # log(p) >= -100 by clamping p, which leaves the gradient finite too
    loss = -(target * input.clamp(min=tiny).log() + (1 - target) * (1 - input).clamp(min=tiny).log())
    return _reduce(loss if weight is None else loss * weight, reduction, "binary_cross_entropy")


def binary_cross_entropy_with_logits(input, target, weight=None, reduction="mean", pos_weight=None):
    """binary_cross_entropy(sigmoid(input), target) computed from the logits without overflow: log sigmoid(x) and
    log sigmoid(-x) are the two entries of log_softmax([0, x]); pos_weight scales the positive term."""
    _same_shape(input, target, "binary_cross_entropy_with_logits")
    log_q = log_softmax(stack([zeros_like(input), input], dim=-1), dim=-1)   # [log sigmoid(-x), log sigmoid(x)]
    positive = target * log_q[..., 1]
    if pos_weight is not None:
        positive = positive * pos_weight
    loss = -(positive + (1 - target) * log_q[..., 0])
    return _reduce(loss if weight is None else loss * weight, reduction, "binary_cross_entropy_with_logits")


def nll_loss(input, target, weight=None, ignore_index=-100, reduction="mean"):
    """-input[n, target[n]] for log-probabilities input (N, C) (or (C,)) and class ids target (N,) (or ()), as
    torch's: weight (C,) scales each class, targets equal to ignore_index count for nothing, and "mean" divides by
    the sum of the counted targets' weights."""
    if input.ndim == 1:   # one sample: PyTorch's unbatched form
        target = target.reshape(1) if isinstance(target, Tensor) else [target]
        loss = nll_loss(input.reshape(1, -1), target, weight, ignore_index, reduction)
        return loss.reshape(()) if reduction == "none" else loss
    if input.ndim != 2:
        raise ValueError(f"nll_loss: input of shape {input.shape}; minitorch takes (N, C) or (C,)")
    xp = backend.xp_of(input.data)
    ids = backend.to_device(target.data if isinstance(target, Tensor) else np.asarray(target), input.device)
    if ids.shape != input.shape[:1] or ids.dtype.kind not in "iu":
        raise ValueError(f"nll_loss: target must be integer class ids of shape {input.shape[:1]}, got "
                         f"{tuple(ids.shape)} {ids.dtype}")
    keep = ids != ignore_index
    safe = xp.where(keep, ids, 0)
    w = keep.astype(input.dtype)
    if weight is not None:
        w = w * (weight.data if isinstance(weight, Tensor) else xp.asarray(weight, dtype=input.dtype))[safe]
    picked = input[Tensor._make(xp.arange(ids.shape[0])), Tensor._make(safe)]
    loss = -(picked * Tensor._make(w))
    if reduction == "mean":
        return loss.sum() / Tensor._make(w.sum())
    return _reduce(loss, reduction, "nll_loss")


def _images(name, x, channels=None):
    """x as (N, C, H, W) (an unbatched (C, H, W) gains N = 1) and whether it did; refuses other shapes clearly."""
    if not isinstance(x, Tensor) or x.ndim not in (3, 4):
        raise ValueError(f"{name}: input must be a Tensor (N, C, H, W) or (C, H, W), got "
                         + (f"shape {x.shape}" if isinstance(x, Tensor) else type(x).__name__))
    if channels is not None and x.shape[-3] != channels:
        raise ValueError(f"{name}: input has {x.shape[-3]} channels, the weight expects {channels}")
    return (x, False) if x.ndim == 4 else (x.unsqueeze(0), True)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """A 2-D convolution (cross-correlation, as torch's): input (N, C, H, W), weight (O, C, kh, kw), bias (O,)
    -> (N, O, Ho, Wo)."""
    refuse_groups("conv2d", groups)
    if not isinstance(weight, Tensor) or weight.ndim != 4:
        raise ValueError("conv2d: weight must be a Tensor (O, C, kh, kw), got "
                         + (f"shape {weight.shape}" if isinstance(weight, Tensor) else type(weight).__name__))
    x, unbatched = _images("conv2d", input, weight.shape[1])
    for name, t in (("weight", weight), ("bias", bias)):   # as PyTorch: no silent promotion of one to the other
        if isinstance(t, Tensor) and t.dtype != x.dtype:
            raise RuntimeError(f"conv2d: Input type ({x.dtype}) and {name} type ({t.dtype}) should be the same")
    out = Conv2dOp.apply(x, weight, bias, w=window(weight.shape[2:], stride, padding, dilation))
    return out.squeeze(0) if unbatched else out


def _pool2d(name, op, input, kernel_size, stride, padding, dilation):
    """max_pool2d's and avg_pool2d's common steps: the window (stride defaults to kernel_size), PyTorch's limit on
    the padding, and the unbatched (C, H, W) form."""
    x, unbatched = _images(name, input)
    w = window(kernel_size, kernel_size if stride is None else stride, padding, dilation)
    if 2 * w.ph > w.kh or 2 * w.pw > w.kw:
        raise ValueError(f"{name}: padding {padding} must be at most half of kernel_size {kernel_size}")
    out = op.apply(x, w=w)
    return out.squeeze(0) if unbatched else out


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1):
    """The largest value of each kernel_size window, (N, C, H, W) -> (N, C, Ho, Wo); stride defaults to the window."""
    return _pool2d("max_pool2d", MaxPool2dOp, input, kernel_size, stride, padding, dilation)


def avg_pool2d(input, kernel_size, stride=None, padding=0):
    """The mean of each kernel_size window (padding counted as zeros), (N, C, H, W) -> (N, C, Ho, Wo)."""
    return _pool2d("avg_pool2d", AvgPool2dOp, input, kernel_size, stride, padding, 1)


def adaptive_avg_pool2d(input, output_size):
    """The mean of each of (oh, ow) bins that tile the image as PyTorch's do: (N, C, H, W) -> (N, C, oh, ow); bin i
    of a side of n spans floor(i n / oh) to ceil((i + 1) n / oh). Bins of one size are one avg_pool2d."""
    x, unbatched = _images("adaptive_avg_pool2d", input)
    H, W = x.shape[-2:]
    oh, ow = (output_size, output_size) if isinstance(output_size, int) else output_size
    oh, ow = H if oh is None else oh, W if ow is None else ow
    if oh <= 0 or ow <= 0:
        raise ValueError(f"adaptive_avg_pool2d: output_size must be positive, got {output_size!r}")
    if H % oh == 0 and W % ow == 0:
        out = avg_pool2d(x, (H // oh, W // ow))
    else:
        def span(i, n, m):
            return slice(i * n // m, -(-(i + 1) * n // m))
        out = stack([stack([x[:, :, span(i, H, oh), span(j, W, ow)].mean(dim=(2, 3)) for j in range(ow)], -1)
                     for i in range(oh)], -2)
    return out.squeeze(0) if unbatched else out


__all__ = ["conv2d", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d",
           "relu", "bias_relu", "gelu", "dropout", "dropout_add", "linear", "split_heads", "merge_heads",
           "embedding", "softmax", "log_softmax",
           "cross_entropy", "layer_norm", "scaled_dot_product_attention", "self_attention", "cross_attention",
           "lstm_cell", "sigmoid", "tanh", "mse_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits",
           "nll_loss", "dropout1d", "dropout2d", "l1_loss", "smooth_l1_loss", "huber_loss"]


def __dir__():  # dir(F) and tab completion list the API, not the modules this file imports (np, backend, ...)
    return __all__
